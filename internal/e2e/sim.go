package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// SimVersion is the llm-d-inference-sim release the external-engine tests
// run: the llm-d project's Go vLLM simulator (OpenAI API, vLLM-format ZMQ
// KV events, vLLM metric names). scripts/setup-test-deps builds exactly this
// version from the Go module proxy into .cache/bin (SimBinary).
const SimVersion = "v0.10.2"

// SimBinary is the simulator binary scripts/setup-test-deps built under the
// module root (ModuleRoot). When it
// is missing the test is skipped, except under CI=true where it fails: CI
// runs the setup script, so a missing binary there is a broken setup, not
// an optional extra.
func SimBinary(t testing.TB, root string) string {
	t.Helper()
	p := filepath.Join(root, ".cache", "bin", "llm-d-inference-sim-"+SimVersion)
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("llm-d-inference-sim %s missing under CI (scripts/setup-test-deps builds it): %v", SimVersion, err)
		}
		t.Skipf("llm-d-inference-sim %s not built (%s missing); run scripts/setup-test-deps to enable the external-engine tests", SimVersion, p)
	}
	return p
}

// SimConfig says how StartSim runs one simulator.
type SimConfig struct {
	// Model is its --model (the served name and the <model> of its event
	// topic kv@<pod>@<model>); "" means Model.
	Model string
	// BlockSize is --block-size; 0 means 16.
	BlockSize int
	// KVBlocks is --kv-cache-size in blocks; 0 means 1024.
	KVBlocks int
	// ZMQ is the endpoint its PUB socket dials (--zmq-endpoint): the
	// simulator connects, so the router binds it (serve --zmq-bind).
	ZMQ string
	// MapEvents publishes vLLM's map-encoded events
	// (--use-vllm-map-event-format) instead of positional arrays.
	MapEvents bool
	// Extra flags, appended.
	Extra []string
}

// Sim is one llm-d-inference-sim process on 127.0.0.1. NB: the simulator
// listens on every interface (":port", it has no host flag); the tests
// send traffic to 127.0.0.1 only.
type Sim struct {
	ID   uint64
	Port int
	// Pod is its POD_IP, the <pod> of its event topic: "127.0.0.1:<port>",
	// so the router maps the topic to the worker whose URL has that
	// host:port.
	Pod   string
	Model string // its --model
	Proc  *Proc
	warm  int // warm-up prompts sent (WaitEventsFlow), so each is new
}

// StartSim starts simulator id on a free port (does not wait: see
// WaitHealthy). It runs offline: --force-dummy-tokenizer (no Hugging Face
// lookup, no render service) and POD_IP set.
func StartSim(t testing.TB, bin string, id uint64, cfg SimConfig) *Sim {
	t.Helper()
	if cfg.Model == "" {
		cfg.Model = Model
	}
	if cfg.BlockSize == 0 {
		cfg.BlockSize = 16
	}
	if cfg.KVBlocks == 0 {
		cfg.KVBlocks = 1024
	}
	s := &Sim{ID: id, Port: FreePorts(t, 1)[0], Model: cfg.Model}
	s.Pod = "127.0.0.1:" + strconv.Itoa(s.Port)
	args := []string{
		"--port", strconv.Itoa(s.Port),
		"--model", cfg.Model,
		"--force-dummy-tokenizer",
		"--enable-kvcache",
		"--kv-cache-size", strconv.Itoa(cfg.KVBlocks),
		"--block-size", strconv.Itoa(cfg.BlockSize),
		"--max-model-len", "16384",
		"--max-num-seqs", "32",
		"--seed", strconv.FormatUint(id, 10),
	}
	if cfg.ZMQ != "" {
		args = append(args, "--zmq-endpoint", cfg.ZMQ)
	}
	if cfg.MapEvents {
		args = append(args, "--use-vllm-map-event-format")
	}
	args = append(args, cfg.Extra...)
	s.Proc = StartEnv(t, "sim"+strconv.FormatUint(id, 10), bin, []string{"POD_IP=" + s.Pod}, args...)
	return s
}

// URL is the simulator's base URL.
func (s *Sim) URL() string { return "http://127.0.0.1:" + strconv.Itoa(s.Port) }

// Healthy asks GET /health.
func (s *Sim) Healthy() (bool, string) {
	if s.Proc.Exited() {
		return false, fmt.Sprintf("sim%d exited: %v", s.ID, s.Proc.ExitErr())
	}
	status, body, err := httpGet(s.URL() + "/health")
	if err != nil {
		return false, err.Error()
	}
	return status == http.StatusOK, fmt.Sprintf("sim%d /health %d %s", s.ID, status, body)
}

// WaitHealthy waits until GET /health answers 200.
func (s *Sim) WaitHealthy(t testing.TB, timeout time.Duration) {
	t.Helper()
	WaitFor(t, timeout, fmt.Sprintf("sim%d healthy", s.ID), s.Healthy)
}

// Kill kills the simulator with SIGKILL.
func (s *Sim) Kill() { s.Proc.Kill() }

// Restart starts it again with the same port, flags and POD_IP (after
// Kill); it does not wait for health.
func (s *Sim) Restart(t testing.TB) { s.Proc = s.Proc.Restart(t) }

// WorkerFlag is its serve --worker value (id, URL, block size).
func (s *Sim) WorkerFlag(blockSize int) string {
	return fmt.Sprintf("%s,id=%d,bs=%d", s.URL(), s.ID, blockSize)
}

// WaitWorkerBlocks waits until r's index holds at least min blocks of
// worker id and returns the count.
func WaitWorkerBlocks(t testing.TB, r *Router, id uint64, min int, timeout time.Duration) int {
	t.Helper()
	n := 0
	WaitFor(t, timeout, fmt.Sprintf("%s to index >= %d blocks of worker %d", r.Name, min, id), func() (bool, string) {
		d, err := r.Index(context.Background())
		if err != nil {
			return false, err.Error()
		}
		n = d.Blocks(id)
		return n >= min, fmt.Sprintf("%d blocks", n)
	})
	return n
}

// StartStaticRouter starts `kvrouter serve --no-nats` on a free loopback
// port with the given flags (static --worker list, --zmq-bind, ...); it
// does not wait (see WaitReady).
func StartStaticRouter(t testing.TB, bin, name string, flags ...string) *Router {
	t.Helper()
	r := &Router{Name: name, Port: FreePorts(t, 1)[0]}
	args := append([]string{"serve",
		"--addr", "127.0.0.1:" + strconv.Itoa(r.Port),
		"--no-nats",
		"--log-level", "info",
	}, flags...)
	r.Proc = Start(t, name, bin, args...)
	return r
}

// SimFleet is simulators behind one `kvrouter serve` that binds the ZMQ
// endpoint they all connect to.
type SimFleet struct {
	Sims   []*Sim
	Router *Router
	ZMQ    string // the router's bound endpoint
}

// StartSimFleet starts n simulators (ids 1..n) publishing to one endpoint
// the router binds (--zmq-bind), and the router with them as its static
// workers and --tokenizer remote (the simulators' /tokenize, so router
// and engine agree on tokens); it waits until the router is ready and
// every simulator healthy.
func StartSimFleet(t testing.TB, kvrouterBin, simBin string, n int, cfg SimConfig, serveFlags ...string) *SimFleet {
	t.Helper()
	if cfg.BlockSize == 0 {
		cfg.BlockSize = 16
	}
	f := &SimFleet{ZMQ: "tcp://127.0.0.1:" + strconv.Itoa(FreePorts(t, 1)[0])}
	cfg.ZMQ = f.ZMQ
	flags := []string{"--block-size", strconv.Itoa(cfg.BlockSize), "--zmq-bind", f.ZMQ,
		"--tokenizer", "remote", "--seed", "1"}
	for i := range n {
		s := StartSim(t, simBin, uint64(i+1), cfg)
		f.Sims = append(f.Sims, s)
		flags = append(flags, "--worker", s.WorkerFlag(cfg.BlockSize))
	}
	f.Router = StartStaticRouter(t, kvrouterBin, "router", append(flags, serveFlags...)...)
	for _, s := range f.Sims {
		s.WaitHealthy(t, 60*time.Second)
	}
	f.Router.WaitReady(t, 60*time.Second)
	for _, s := range f.Sims {
		f.WaitEventsFlow(t, s, 60*time.Second, "events of sim"+strconv.FormatUint(s.ID, 10)+" indexed", func(blocks int) bool { return blocks > 0 })
	}
	return f
}

// WaitEventsFlow sends short warm-up prompts straight to s (not through
// the router, so routing statistics do not see them), a fresh one about
// every second, until done holds for the number of blocks the router
// indexes for s, and returns that number.
//
// Why: a ZMQ PUB drops what it publishes before its connection to the
// router's bound SUB is up and subscribed (the simulator dials in the
// background, retrying every second), and neither /health nor /readyz
// says when that happened. Only an event the router indexed proves the
// path, so the tests wait for one before they measure. A real deployment
// loses the same first events; it only costs cache hits the router does
// not predict, and the engine's next events fill the index.
func (f *SimFleet) WaitEventsFlow(t testing.TB, s *Sim, timeout time.Duration, what string, done func(blocks int) bool) int {
	t.Helper()
	n, sent, polls := 0, 0, 0
	WaitFor(t, timeout, what, func() (bool, string) {
		d, err := f.Router.Index(context.Background())
		if err != nil {
			return false, err.Error()
		}
		n = d.Blocks(s.ID)
		if done(n) {
			return true, ""
		}
		if polls%40 == 0 { // WaitFor polls every 25 ms
			sent++
			s.warm++
			prompt := fmt.Sprintf("Warm-up %d of sim %d.%s", s.warm, s.ID, strings.Repeat(" kv cache warm up", 12))
			status, body, err := postJSON(s.URL()+"/v1/completions", map[string]any{"model": s.Model, "prompt": prompt, "max_tokens": 1})
			if err != nil || status != http.StatusOK {
				return false, fmt.Sprintf("warm-up %d: %d %v %s", sent, status, err, body)
			}
		}
		polls++
		return false, fmt.Sprintf("%d blocks after %d warm-up prompts", n, sent)
	})
	return n
}

// postJSON posts v as JSON and returns the status and body.
func postJSON(url string, v any) (int, string, error) {
	b, _ := json.Marshal(v)
	resp, err := httpClient.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out), err
}
