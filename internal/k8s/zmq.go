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

// zmqEndpoint is pod's PUB endpoint, or "" when it names none and no
// ZMQ port is configured.
func (p *Pool) zmqEndpoint(pod *corev1.Pod) string {
	ip := pod.Status.PodIP
	if v, ok := pod.Annotations[AnnotationZMQEndpoint]; ok {
		return strings.ReplaceAll(v, "$(POD_IP)", ip)
	}
	if p.cfg.ZMQPort > 0 && ip != "" {
		return "tcp://" + net.JoinHostPort(ip, strconv.Itoa(p.cfg.ZMQPort))
	}
	return ""
}
