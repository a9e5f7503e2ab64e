package discovery

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/kvrouter/kvrouter/router"
)

// Worker is what a worker tells the router about itself.
type Worker struct {
	ID               uint64            `json:"id" yaml:"id"`
	Model            string            `json:"model,omitempty" yaml:"model,omitempty"`
	URL              string            `json:"url" yaml:"url"` // OpenAI-compatible base URL
	BlockSize        int               `json:"block_size" yaml:"block_size"`
	TotalKVBlocks    int               `json:"total_kv_blocks,omitempty" yaml:"total_kv_blocks,omitempty"`
	MaxBatchedTokens int               `json:"max_num_batched_tokens,omitempty" yaml:"max_num_batched_tokens,omitempty"`
	DPSize           int               `json:"dp_size,omitempty" yaml:"dp_size,omitempty"`
	EventEndpoint    string            `json:"event_endpoint,omitempty" yaml:"event_endpoint,omitempty"`   // ZMQ PUB ("" = NATS stream)
	ReplayEndpoint   string            `json:"replay_endpoint,omitempty" yaml:"replay_endpoint,omitempty"` // ZMQ replay ROUTER
	Labels           map[string]string `json:"labels,omitempty" yaml:"labels,omitempty"`
	// Epoch identifies the worker's process start (a fresh random id per
	// start). A registration with a new epoch means the engine restarted
	// with an empty cache: the router drops what it remembered of it
	// (DESIGN.md §9). "" = not announced (static workers).
	Epoch string `json:"epoch,omitempty" yaml:"epoch,omitempty"`
	Pod   string `json:"pod,omitempty" yaml:"pod,omitempty"` // pod of the ZMQ topic kv@<pod>@<model> (serve --zmq-bind), when not the URL's host:port or host
	// Role is the worker's part in disaggregated serving (DESIGN.md §10):
	// "prefill", "decode", or "both" ("" = both).
	Role string `json:"role,omitempty" yaml:"role,omitempty"`
	// BootstrapPort, on an SGLang prefill worker, is its bootstrap
	// server's port: the router then speaks SGLang's PD protocol to it.
	// 0: vLLM's (kv_transfer_params).
	BootstrapPort int `json:"bootstrap_port,omitempty" yaml:"bootstrap_port,omitempty"`
	// MaxNumSeqs is the engine's cap on running requests per rank (vLLM's
	// max_num_seqs, SGLang's max_running_requests): at the cap the time
	// cost adds the wait for a slot (router.WorkerInfo.MaxNumSeqs). 0 =
	// not announced (serve --worker-max-num-seqs applies).
	MaxNumSeqs int `json:"max_num_seqs,omitempty" yaml:"max_num_seqs,omitempty"`
	// Metrics says whether the router reads the engine's Prometheus
	// /metrics: "" (auto: read it when it has vLLM or SGLang load gauges;
	// a worker without them is an OpenAI-compatible server whose health
	// comes from /health, else /v1/models, and whose load is the router's
	// own bookings) or "off" (never read it).
	Metrics string `json:"metrics,omitempty" yaml:"metrics,omitempty"`
	// MaxLoRAs is the worker's LoRA adapter slots (vLLM's --max-loras),
	// LoRAs the adapters it has loaded: a worker announcing either is
	// placed by the router's LoRA preference (router.WorkerInfo.LoRAKnown).
	// The pool's GET /v1/models poll updates LoRAs for a worker that did
	// not announce them. Both optional: older registrations omit them.
	MaxLoRAs int      `json:"max_loras,omitempty" yaml:"max_loras,omitempty"`
	LoRAs    []string `json:"loras,omitempty" yaml:"loras,omitempty"`
}

// MetricsOff is Worker.Metrics for a worker whose /metrics is never read.
const MetricsOff = "off"

// Bounds of a registration's fields: anything beyond is refused, since a
// registration is input from the network and its sizes drive allocations
// and arithmetic in the router.
const (
	MaxBlockSize        = 1 << 16
	MaxTotalKVBlocks    = 1 << 40
	MaxBatchedTokens    = 1 << 30
	MaxNumSeqs          = 1 << 20
	MaxLabels           = 64
	maxStringLen        = 1024 // model, label keys and values, epoch, pod
	maxURLLen           = 2048
	maxRegistrationSize = 64 << 10
)

// ErrInvalid is wrapped by Validate's errors.
var ErrInvalid = errors.New("discovery: invalid worker")

// Validate reports every problem of w (each wraps ErrInvalid): the URL
// must be http(s)://host, sizes within the bounds above and the dp size
// within router.MaxDPSize, endpoints tcp://host:port.
func (w Worker) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w %d: "+format, append([]any{ErrInvalid, w.ID}, args...)...))
	}
	switch u, err := url.Parse(w.URL); {
	case w.URL == "":
		bad("url required")
	case len(w.URL) > maxURLLen:
		bad("url longer than %d bytes", maxURLLen)
	case err != nil || u.Host == "" || u.Hostname() == "" || (u.Scheme != "http" && u.Scheme != "https") || u.User != nil:
		bad("bad url %q: want http(s)://host[:port][/path]", w.URL)
	case u.Port() != "" && !validPort(u.Port()):
		bad("bad port in url %q", w.URL)
	}
	if w.BlockSize < 0 || w.DPSize < 0 || w.TotalKVBlocks < 0 || w.MaxBatchedTokens < 0 || w.MaxNumSeqs < 0 || w.BootstrapPort < 0 || w.BootstrapPort > 65535 {
		bad("negative size or bootstrap port out of range")
	}
	if w.BlockSize > MaxBlockSize || w.DPSize > router.MaxDPSize || w.TotalKVBlocks > MaxTotalKVBlocks || w.MaxBatchedTokens > MaxBatchedTokens ||
		w.MaxNumSeqs > MaxNumSeqs {
		bad("size out of bounds (block size %d <= %d, dp size %d <= %d, kv blocks %d <= %d, batched tokens %d <= %d, max seqs %d <= %d)",
			w.BlockSize, MaxBlockSize, w.DPSize, router.MaxDPSize, w.TotalKVBlocks, MaxTotalKVBlocks, w.MaxBatchedTokens, MaxBatchedTokens,
			w.MaxNumSeqs, MaxNumSeqs)
	}
	if _, err := router.ParseRole(w.Role); err != nil {
		bad("%v", err)
	}
	if w.Metrics != "" && w.Metrics != "auto" && w.Metrics != MetricsOff {
		bad("metrics %q: want auto or off", w.Metrics)
	}
	for _, ep := range []string{w.EventEndpoint, w.ReplayEndpoint} {
		if ep == "" {
			continue
		}
		hp, ok := strings.CutPrefix(ep, "tcp://")
		host, port, err := net.SplitHostPort(hp)
		if !ok || err != nil || host == "" || !validPort(port) || len(ep) > maxURLLen {
			bad("endpoint %q: want tcp://host:port", ep)
		}
	}
	if len(w.Model) > maxStringLen || len(w.Epoch) > maxStringLen || len(w.Pod) > maxStringLen {
		bad("model, epoch or pod longer than %d bytes", maxStringLen)
	}
	if w.MaxLoRAs < 0 || w.MaxLoRAs > router.MaxWorkerLoRAs || len(w.LoRAs) > router.MaxWorkerLoRAs {
		bad("max loras %d or %d loaded adapters: want 0..%d", w.MaxLoRAs, len(w.LoRAs), router.MaxWorkerLoRAs)
	}
	for _, a := range w.LoRAs {
		if a == "" || len(a) > maxStringLen {
			bad("lora adapter %.40q: empty or longer than %d bytes", a, maxStringLen)
			break
		}
	}
	if len(w.Labels) > MaxLabels {
		bad("%d labels, at most %d", len(w.Labels), MaxLabels)
	}
	for k, v := range w.Labels {
		if k == "" || len(k) > maxStringLen || len(v) > maxStringLen {
			bad("label %.40q: empty key or longer than %d bytes", k, maxStringLen)
			break
		}
	}
	return errors.Join(errs...)
}

func validPort(p string) bool {
	n, err := strconv.ParseUint(p, 10, 16)
	return err == nil && n > 0
}

// ErrBlockSize is wrapped by CheckBlockSize's error.
var ErrBlockSize = errors.New("discovery: block size mismatch")

// CheckBlockSize refuses a worker whose block size is set and differs from
// the router's (0 on the worker means "the router's").
func CheckBlockSize(routerBlockSize int, w Worker) error {
	if w.BlockSize != 0 && w.BlockSize != routerBlockSize {
		return fmt.Errorf("%w: worker %d (%s) uses block size %d, router uses %d; its KV events would never match",
			ErrBlockSize, w.ID, w.URL, w.BlockSize, routerBlockSize)
	}
	return nil
}

// ParseWorkerFlag parses one --worker flag value:
//
//	URL[,key=value...]
//
// keys: id, model, zmq (event endpoint), replay, pod (bind-topology topic
// pod, see Worker.Pod), block-size (or bs),
// kv-blocks, max-batched-tokens, max-num-seqs, max-loras, dp-size, role (prefill, decode or both),
// bootstrap-port (an SGLang prefill worker's), metrics (auto or off, see
// Worker.Metrics), label.NAME=VALUE. Example:
//
//	--worker http://10.0.0.5:8000,id=1,zmq=tcp://10.0.0.5:5557,replay=tcp://10.0.0.5:5558,block-size=16
//
// A missing id is filled by the caller (see NumberWorkers).
func ParseWorkerFlag(s string) (Worker, error) {
	parts := strings.Split(s, ",")
	w := Worker{URL: strings.TrimSpace(parts[0])}
	for _, kv := range parts[1:] {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			return w, fmt.Errorf("discovery: --worker %q: %q is not key=value", s, kv)
		}
		var err error
		switch k {
		case "id":
			w.ID, err = strconv.ParseUint(v, 10, 64)
		case "model":
			w.Model = v
		case "zmq", "events":
			w.EventEndpoint = v
		case "replay":
			w.ReplayEndpoint = v
		case "pod":
			w.Pod = v
		case "block-size", "bs":
			w.BlockSize, err = strconv.Atoi(v)
		case "kv-blocks":
			w.TotalKVBlocks, err = strconv.Atoi(v)
		case "max-batched-tokens":
			w.MaxBatchedTokens, err = strconv.Atoi(v)
		case "max-num-seqs":
			w.MaxNumSeqs, err = strconv.Atoi(v)
		case "max-loras":
			w.MaxLoRAs, err = strconv.Atoi(v)
		case "dp-size":
			w.DPSize, err = strconv.Atoi(v)
		case "role":
			w.Role = v
		case "bootstrap-port":
			w.BootstrapPort, err = strconv.Atoi(v)
		case "metrics":
			w.Metrics = v
		default:
			name, ok := strings.CutPrefix(k, "label.")
			if !ok {
				return w, fmt.Errorf("discovery: --worker %q: unknown key %q", s, k)
			}
			if w.Labels == nil {
				w.Labels = map[string]string{}
			}
			w.Labels[name] = v
		}
		if err != nil {
			return w, fmt.Errorf("discovery: --worker %q: %s: %w", s, k, err)
		}
	}
	return w, w.Validate()
}

// StaticFile is the YAML static fleet file:
//
//	workers:
//	  - id: 1
//	    url: http://10.0.0.5:8000
//	    block_size: 16
//	    event_endpoint: tcp://10.0.0.5:5557
//	    replay_endpoint: tcp://10.0.0.5:5558
type StaticFile struct {
	Workers []Worker `yaml:"workers"`
}

// DecodeStatic decodes a static fleet YAML document; unknown keys are errors.
func DecodeStatic(r io.Reader) ([]Worker, error) {
	d := yaml.NewDecoder(r)
	d.KnownFields(true)
	var f StaticFile
	if err := d.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("discovery: static fleet: %w", err)
	}
	var errs []error
	for _, w := range f.Workers {
		errs = append(errs, w.Validate())
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return NumberWorkers(f.Workers)
}

// LoadStatic reads a static fleet YAML file.
func LoadStatic(path string) ([]Worker, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("discovery: %w", err)
	}
	defer f.Close()
	return DecodeStatic(f)
}

// NumberWorkers gives workers without an id (0) the next free ids from 1
// in list order, and rejects duplicate ids.
func NumberWorkers(ws []Worker) ([]Worker, error) {
	used := map[uint64]bool{}
	for _, w := range ws {
		if w.ID != 0 {
			if used[w.ID] {
				return nil, fmt.Errorf("discovery: duplicate worker id %d", w.ID)
			}
			used[w.ID] = true
		}
	}
	next := uint64(1)
	out := append([]Worker(nil), ws...)
	for i := range out {
		if out[i].ID == 0 {
			for used[next] {
				next++
			}
			out[i].ID = next
			used[next] = true
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}
