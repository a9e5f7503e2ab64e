package k8s

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kvrouter/kvrouter/internal/discovery"
	"github.com/kvrouter/kvrouter/internal/eventplane/zmqsub"
	"github.com/kvrouter/kvrouter/router"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

// Pod annotations read by Pool (see the package doc).
const (
	AnnotationWorkerID  = "kvrouter.io/worker-id"
	AnnotationBlockSize = "kvrouter.io/block-size"
	AnnotationDPSize    = "kvrouter.io/dp-size"
	// AnnotationMaxNumSeqs is the engine's max_num_seqs (running requests
	// per rank); absent or malformed = unknown (the picker's
	// --worker-max-num-seqs applies).
	AnnotationMaxNumSeqs = "kvrouter.io/max-num-seqs"
	// AnnotationMaxBatchedTokens is the engine's max_num_batched_tokens
	// (token budget per step, per rank); absent or malformed = unknown
	// (the picker's --worker-max-batched-tokens applies).
	AnnotationMaxBatchedTokens = "kvrouter.io/max-batched-tokens"
	// AnnotationMaxLoRAs is the engine's LoRA adapter slots (vLLM's
	// --max-loras): the router then places adapter requests by its LoRA
	// preference; absent or malformed = unknown.
	AnnotationMaxLoRAs = "kvrouter.io/max-loras"
)

// PoolConfig configures pod discovery.
type PoolConfig struct {
	// Selector is the InferencePool's pod label selector
	// ("app=vllm-llama3-8b"). Default "" = discovery off.
	Selector string `yaml:"selector"`
	// Namespace of the pool and its pods. Default "default".
	Namespace string `yaml:"namespace"`
	// TargetPort is the model servers' port (the pool's
	// targetPorts[0].number). Default 8000.
	TargetPort int `yaml:"target_port"`
	// Kubeconfig is a kubeconfig file for running outside the cluster.
	// Default "" = the in-cluster service account.
	Kubeconfig string `yaml:"kubeconfig"`
	// Resync re-delivers every pod this often (a safety net). Default 0 =
	// never.
	Resync time.Duration `yaml:"resync"`
	// ZMQPort is the port of each pod's KV-event PUB (vLLM's
	// kv-events-config endpoint tcp://*:PORT): the router dials
	// tcp://<pod-ip>:PORT while the pod is a member (connect topology;
	// SetSources). Default 0 = no dialling (pods publish to the bound SUB
	// or through NATS), unless a pod names AnnotationZMQEndpoint.
	ZMQPort int `yaml:"zmq_port"`
	// ZMQReplayPort is the port of each dialled pod's replay socket
	// (vLLM's kv-events-config replay_endpoint tcp://*:PORT): on a
	// sequence gap the router asks it for the missed batches instead of
	// clearing the worker's blocks. Default 0 = no replay, unless a pod
	// names AnnotationZMQReplayEndpoint. Used only with a dialled PUB.
	ZMQReplayPort int `yaml:"zmq_replay_port"`
	// Logger; default slog.Default().
	Logger *slog.Logger `yaml:"-"`
}

// DefaultPoolConfig returns the defaults (discovery off).
func DefaultPoolConfig() PoolConfig {
	return PoolConfig{Namespace: "default", TargetPort: 8000}
}

// Enabled reports whether discovery is on (a selector is set).
func (c PoolConfig) Enabled() bool { return c.Selector != "" }

// Validate reports every problem, joined.
func (c PoolConfig) Validate() error {
	var errs []error
	if c.Selector != "" {
		if _, err := labels.Parse(c.Selector); err != nil {
			errs = append(errs, fmt.Errorf("k8s: pool selector %q: %w", c.Selector, err))
		}
	}
	if c.Enabled() && (c.TargetPort <= 0 || c.TargetPort > 65535) {
		errs = append(errs, fmt.Errorf("k8s: target port %d out of range", c.TargetPort))
	}
	if c.ZMQPort < 0 || c.ZMQPort > 65535 {
		errs = append(errs, fmt.Errorf("k8s: zmq port %d out of range", c.ZMQPort))
	}
	if c.ZMQReplayPort < 0 || c.ZMQReplayPort > 65535 {
		errs = append(errs, fmt.Errorf("k8s: zmq replay port %d out of range", c.ZMQReplayPort))
	}
	if c.Resync < 0 {
		errs = append(errs, fmt.Errorf("k8s: resync %v < 0", c.Resync))
	}
	return errors.Join(errs...)
}

// member is a pod the membership knows.
type member struct {
	id     uint64
	url    string
	zmq    string // KV-event PUB endpoint dialled, or ""
	replay string // its replay endpoint, or ""
	// The engine's annotated shape: block and dp size change what its
	// events mean, so a pod whose annotations change them joins anew;
	// max_num_seqs, max_num_batched_tokens and max-loras only tune the
	// cost, the thresholds and the LoRA preference, so they are updated
	// in place.
	blockSize, dpSize, maxNumSeqs, maxBatched, maxLoRAs int
}

func (m member) withCaps(seqs, batched, loras int) member {
	m.maxNumSeqs, m.maxBatched, m.maxLoRAs = seqs, batched, loras
	return m
}

// Pool watches the pods of one InferencePool. Build with NewPool, then Run.
type Pool struct {
	cfg    PoolConfig
	sel    labels.Selector
	client kubernetes.Interface
	log    *slog.Logger
	synced atomic.Bool

	sources Sources // nil: no pod is dialled

	mu      sync.Mutex
	members map[string]member // by namespace/name
}

// NewPool validates cfg and builds a pool watcher on client (nil: built
// from cfg.Kubeconfig, or the in-cluster config). It starts nothing.
func NewPool(cfg PoolConfig, client kubernetes.Interface) (*Pool, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Namespace == "" {
		cfg.Namespace = "default"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	sel, err := labels.Parse(cfg.Selector)
	if err != nil {
		return nil, fmt.Errorf("k8s: %w", err)
	}
	if client == nil {
		var rc *rest.Config
		if cfg.Kubeconfig != "" {
			rc, err = clientcmd.BuildConfigFromFlags("", cfg.Kubeconfig)
		} else {
			rc, err = rest.InClusterConfig()
		}
		if err != nil {
			return nil, fmt.Errorf("k8s: client config: %w", err)
		}
		if client, err = kubernetes.NewForConfig(rc); err != nil {
			return nil, fmt.Errorf("k8s: client: %w", err)
		}
	}
	return &Pool{cfg: cfg, sel: sel, client: client, log: cfg.Logger,
		members: map[string]member{}}, nil
}

// Synced reports whether the initial pod list was applied.
func (p *Pool) Synced() bool { return p.synced.Load() }

// Run watches the pool's pods until ctx is done, joining each ready pod
// to m and taking it out again when it turns unready, changes address or
// goes away.
func (p *Pool) Run(ctx context.Context, m discovery.Membership) error {
	f := informers.NewSharedInformerFactoryWithOptions(p.client, p.cfg.Resync,
		informers.WithNamespace(p.cfg.Namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = p.cfg.Selector }))
	inf := f.Core().V1().Pods().Informer()
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { p.apply(m, obj, false) },
		UpdateFunc: func(_, obj any) { p.apply(m, obj, false) },
		DeleteFunc: func(obj any) { p.apply(m, obj, true) },
	})
	if err != nil {
		return fmt.Errorf("k8s: pod handler: %w", err)
	}
	f.Start(ctx.Done())
	defer f.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return nil // ctx done
	}
	p.synced.Store(true)
	p.log.Info("inference pool synced", "namespace", p.cfg.Namespace, "selector", p.cfg.Selector,
		"workers", len(p.Members()))
	<-ctx.Done()
	return nil
}

// Members returns the pods currently joined, by namespace/name.
func (p *Pool) Members() map[string]uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]uint64, len(p.members))
	for k, v := range p.members {
		out[k] = v.id
	}
	return out
}

// apply reconciles one pod (informer handlers run on one goroutine).
func (p *Pool) apply(m discovery.Membership, obj any, deleted bool) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj, deleted = t.Obj, true
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	key := pod.Namespace + "/" + pod.Name
	w, ready := p.worker(pod)
	ep, replay := "", ""
	if p.sources != nil {
		ep, replay = p.zmqEndpoint(pod)
	}
	if deleted || !p.sel.Matches(labels.Set(pod.Labels)) {
		ready = false
	}
	p.mu.Lock()
	old, had := p.members[key]
	p.mu.Unlock()
	now := member{id: w.ID, url: w.URL, zmq: ep, replay: replay,
		blockSize: w.BlockSize, dpSize: w.DPSize, maxNumSeqs: w.MaxNumSeqs, maxBatched: w.MaxBatchedTokens, maxLoRAs: w.MaxLoRAs}
	if had && ready && old == now {
		return // nothing changed for the router
	}
	if had && ready && old.withCaps(now.maxNumSeqs, now.maxBatched, now.maxLoRAs) == now {
		p.update(m, key, w, now) // only max_num_seqs, max_num_batched_tokens or max-loras changed
		return
	}
	if had {
		p.mu.Lock()
		delete(p.members, key)
		p.mu.Unlock()
		if old.zmq != "" {
			p.sources.Remove(old.id) // stop ingesting before the worker goes
		}
		m.Leave(old.id)
		p.log.Info("pool pod left", "pod", key, "worker", old.id, "url", old.url)
	}
	if !ready {
		return
	}
	if err := m.Join(w); err != nil {
		p.log.Warn("pool pod refused", "pod", key, "worker", w.ID, "err", err)
		return
	}
	if ep != "" {
		if err := p.sources.Add(zmqsub.Source{WorkerID: w.ID, Endpoint: ep, Replay: replay, DPSize: max(w.DPSize, 1)}); err != nil {
			p.log.Warn("pool pod: KV events not dialled", "pod", key, "worker", w.ID, "endpoint", ep, "err", err)
		}
	}
	p.mu.Lock()
	p.members[key] = now
	p.mu.Unlock()
	p.log.Info("pool pod joined", "pod", key, "worker", w.ID, "url", w.URL, "zmq", ep)
}

// update re-announces a joined pod whose max_num_seqs or
// max_num_batched_tokens annotation was edited: Join updates a known worker in place, keeping its index and
// loads, so the edit applies without the pod restarting.
func (p *Pool) update(m discovery.Membership, key string, w discovery.Worker, now member) {
	if err := m.Join(w); err != nil {
		p.log.Warn("pool pod update refused", "pod", key, "worker", w.ID, "err", err)
		return
	}
	p.mu.Lock()
	p.members[key] = now
	p.mu.Unlock()
	p.log.Info("pool pod updated", "pod", key, "worker", w.ID, "max_num_seqs", w.MaxNumSeqs, "max_num_batched_tokens", w.MaxBatchedTokens)
}

// worker describes pod as a worker; ready is false while the pod has no
// IP, is not Ready, or is terminating.
func (p *Pool) worker(pod *corev1.Pod) (discovery.Worker, bool) {
	ip := pod.Status.PodIP
	w := discovery.Worker{
		URL:    (&url.URL{Scheme: "http", Host: net.JoinHostPort(ip, strconv.Itoa(p.cfg.TargetPort))}).String(),
		Labels: map[string]string{"pod": pod.Name},
	}
	if v, ok := pod.Annotations[AnnotationWorkerID]; ok {
		id, err := strconv.ParseUint(v, 10, 64)
		if err != nil || id == 0 {
			p.log.Warn("pool pod: bad worker id annotation", "pod", pod.Name, "value", v)
			return w, false
		}
		w.ID = id
	} else {
		w.ID = zmqsub.TopicHash(ip)
	}
	w.BlockSize, _ = strconv.Atoi(pod.Annotations[AnnotationBlockSize])
	w.DPSize, _ = strconv.Atoi(pod.Annotations[AnnotationDPSize])
	w.MaxNumSeqs = p.annotatedInt(pod, AnnotationMaxNumSeqs, discovery.MaxNumSeqs)
	w.MaxBatchedTokens = p.annotatedInt(pod, AnnotationMaxBatchedTokens, discovery.MaxBatchedTokens)
	w.MaxLoRAs = p.annotatedInt(pod, AnnotationMaxLoRAs, router.MaxWorkerLoRAs)
	return w, ip != "" && pod.DeletionTimestamp == nil && podReady(pod)
}

// annotatedInt reads pod's annotation key as an int in [0, limit]; absent
// is 0 (unknown), and a malformed or out-of-range value is ignored with a
// warning rather than refusing the pod.
func (p *Pool) annotatedInt(pod *corev1.Pod, key string, limit int) int {
	v, ok := pod.Annotations[key]
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > limit {
		p.log.Warn("pool pod: bad "+strings.TrimPrefix(key, "kvrouter.io/")+" annotation, ignored", "pod", pod.Name, "value", v)
		return 0
	}
	return n
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
