package k8s

import (
	"net"
	"strconv"
	"strings"

	"github.com/kvrouter/kvrouter/internal/eventplane/zmqsub"
	corev1 "k8s.io/api/core/v1"
)

// AnnotationZMQEndpoint names the pod's KV-event PUB endpoint for the
// connect topology ("tcp://$(POD_IP):5557"; $(POD_IP) is replaced by the
// pod's IP, since Kubernetes expands no annotation). It overrides
// PoolConfig.ZMQPort for that pod.
const AnnotationZMQEndpoint = "kvrouter.io/zmq-endpoint"

// AnnotationZMQReplayEndpoint names the pod's replay endpoint (vLLM's
// replay_endpoint, "tcp://$(POD_IP):5558"), asked for missed batches on
// a sequence gap. It overrides PoolConfig.ZMQReplayPort for that pod.
const AnnotationZMQReplayEndpoint = "kvrouter.io/zmq-replay-endpoint"

// Sources is what the pool dials its pods' KV-event publishers with
// (a zmqsub.Subscriber built with Config.Dynamic).
type Sources interface {
	Add(zmqsub.Source) error
	Remove(worker uint64)
}

// SetSources makes Run dial each joined pod's PUB (PoolConfig.ZMQPort or
// the pod's AnnotationZMQEndpoint) through src while the pod is a
// member. Call before Run.
func (p *Pool) SetSources(src Sources) { p.sources = src }

// zmqEndpoint is pod's PUB endpoint and its replay endpoint; each "" when
// the pod names none and no port is configured (no replay without a PUB).
func (p *Pool) zmqEndpoint(pod *corev1.Pod) (pub, replay string) {
	pub = podEndpoint(pod, AnnotationZMQEndpoint, p.cfg.ZMQPort)
	if pub == "" {
		return "", ""
	}
	return pub, podEndpoint(pod, AnnotationZMQReplayEndpoint, p.cfg.ZMQReplayPort)
}

// podEndpoint is the pod's annotation (with $(POD_IP) replaced, since
// Kubernetes expands no annotation), else tcp://<pod-ip>:port, else "".
func podEndpoint(pod *corev1.Pod, annotation string, port int) string {
	ip := pod.Status.PodIP
	if v, ok := pod.Annotations[annotation]; ok {
		return strings.ReplaceAll(v, "$(POD_IP)", ip)
	}
	if port > 0 && ip != "" {
		return "tcp://" + net.JoinHostPort(ip, strconv.Itoa(port))
	}
	return ""
}
