package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Model is the served model name the fleet uses (the kvrouter default).
const Model = "kvrouter-mock"

// Response headers of `kvrouter serve` (internal/frontend).
const (
	HeaderWorker  = "X-Kvrouter-Worker"
	HeaderOverlap = "X-Kvrouter-Overlap-Blocks"
)

// Mocker is a `kvrouter mocker` process.
type Mocker struct {
	ID   uint64
	Port int
	Proc *Proc
}

// StartMocker starts `kvrouter mocker --worker-id id` publishing to natsURL,
// with extra flags appended.
func StartMocker(t testing.TB, bin string, id uint64, natsURL string, extra ...string) *Mocker {
	t.Helper()
	m := &Mocker{ID: id, Port: FreePorts(t, 1)[0]}
	args := append([]string{"mocker",
		"--addr", "127.0.0.1:" + strconv.Itoa(m.Port),
		"--nats", natsURL,
		"--worker-id", strconv.FormatUint(id, 10),
		"--log-level", "info",
	}, extra...)
	m.Proc = Start(t, "mocker"+strconv.FormatUint(id, 10), bin, args...)
	return m
}

// Router is a `kvrouter serve` process.
type Router struct {
	Name string
	Port int
	Proc *Proc // the current process (replaced by Restart)
}

// StartRouter starts `kvrouter serve` on a free loopback port against
// natsURL, with extra flags appended (does not wait: see WaitReady).
func StartRouter(t testing.TB, bin, name, natsURL string, extra ...string) *Router {
	t.Helper()
	r := &Router{Name: name, Port: FreePorts(t, 1)[0]}
	args := append([]string{"serve",
		"--addr", "127.0.0.1:" + strconv.Itoa(r.Port),
		"--nats", natsURL,
		"--log-level", "info",
	}, extra...)
	r.Proc = Start(t, name, bin, args...)
	return r
}

// URL is the router's base URL.
func (r *Router) URL() string { return "http://127.0.0.1:" + strconv.Itoa(r.Port) }

// Kill kills the router with SIGKILL.
func (r *Router) Kill() { r.Proc.Kill() }

// Restart starts the router again with the same port and flags (after Kill
// or Stop); it does not wait for readiness.
func (r *Router) Restart(t testing.TB) { r.Proc = r.Proc.Restart(t) }

// Get does GET path (e.g. "/readyz", "/debug/loads") on the router and
// returns the status and body.
func (r *Router) Get(path string) (status int, body string, err error) {
	return httpGet(r.URL() + path)
}

// Ready asks GET /readyz: 200 means ready; the body says why not.
func (r *Router) Ready() (bool, string) {
	if r.Proc.Exited() {
		return false, r.Proc.ExitReport()
	}
	status, body, err := r.Get("/readyz")
	if err != nil {
		return false, err.Error()
	}
	return status == http.StatusOK, fmt.Sprintf("%s /readyz %d %s", r.Name, status, strings.TrimSpace(body))
}

// WaitReady polls /readyz until 200 (failing fast if the process exits).
func (r *Router) WaitReady(t testing.TB, timeout time.Duration) {
	t.Helper()
	WaitFor(t, timeout, r.Name+" ready", r.Ready)
}

// Completion is the outcome of one /v1/completions call.
type Completion struct {
	Status  int
	Worker  uint64 // X-Kvrouter-Worker
	Overlap int    // X-Kvrouter-Overlap-Blocks: cached blocks on the chosen worker
	Body    string
}

// Complete sends one non-streaming completion and reads the whole answer.
func (r *Router) Complete(ctx context.Context, prompt string, maxTokens int) (Completion, error) {
	body, _ := json.Marshal(map[string]any{"model": Model, "prompt": prompt, "max_tokens": maxTokens})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.URL()+"/v1/completions", bytes.NewReader(body))
	if err != nil {
		return Completion{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := httpClient.Do(req)
	if err != nil {
		return Completion{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	c := Completion{Status: resp.StatusCode, Body: string(b)}
	if err != nil {
		return c, fmt.Errorf("%s: read answer: %w", r.Name, err)
	}
	c.Worker, _ = strconv.ParseUint(resp.Header.Get(HeaderWorker), 10, 64)
	c.Overlap, _ = strconv.Atoi(resp.Header.Get(HeaderOverlap))
	if c.Status != http.StatusOK {
		return c, fmt.Errorf("%s: status %d: %s", r.Name, c.Status, strings.TrimSpace(c.Body))
	}
	if !strings.Contains(c.Body, `"choices"`) {
		return c, fmt.Errorf("%s: answer without choices: %s", r.Name, c.Body)
	}
	return c, nil
}

// CompleteRetry retries Complete (errors and non-200 answers) every 50 ms
// until it succeeds or timeout passes; it returns the answer and how many
// attempts failed.
func (r *Router) CompleteRetry(ctx context.Context, prompt string, maxTokens int, timeout time.Duration) (Completion, int, error) {
	var c Completion
	failed := 0
	var last error
	err := Poll(ctx, timeout, func() (bool, string) {
		c, last = r.Complete(ctx, prompt, maxTokens)
		if last != nil {
			failed++
			return false, last.Error()
		}
		return true, ""
	})
	return c, failed, err
}

// IndexWorker is one worker+rank line of GET /debug/index.
type IndexWorker struct {
	Worker uint64         `json:"worker_id"`
	Rank   uint32         `json:"dp_rank"`
	URL    string         `json:"url,omitempty"`
	Blocks map[string]int `json:"blocks"`
	Total  int            `json:"total_blocks"`
	// MaxNumSeqs is the sequence cap the router uses for the worker (on
	// its rank-0 line; 0 = unknown).
	MaxNumSeqs int `json:"max_num_seqs,omitempty"`
}

// IndexDump is the part of GET /debug/index the tests compare.
type IndexDump struct {
	Workers []IndexWorker `json:"workers"`
	// DumpHash is a stable hash of the whole index, when the router reports
	// one; Key prefers it to the per-worker counts.
	DumpHash string `json:"dump_hash,omitempty"`
}

// Index reads GET /debug/index.
func (r *Router) Index(ctx context.Context) (IndexDump, error) {
	status, body, err := httpGet(r.URL() + "/debug/index")
	if err != nil {
		return IndexDump{}, err
	}
	if status != http.StatusOK {
		return IndexDump{}, fmt.Errorf("%s /debug/index: %d %s", r.Name, status, body)
	}
	var d IndexDump
	if err := json.Unmarshal([]byte(body), &d); err != nil {
		return IndexDump{}, fmt.Errorf("%s /debug/index: %w", r.Name, err)
	}
	return d, nil
}

// Blocks is the number of blocks the index holds for worker id, all ranks
// and tiers.
func (d IndexDump) Blocks(id uint64) int {
	n := 0
	for _, w := range d.Workers {
		if w.Worker == id {
			n += w.Total
		}
	}
	return n
}

// Key is a canonical form of the index for comparing replicas: the dump
// hash when reported, else one sorted line per worker+rank holding blocks
// with its per-tier counts ("w1/0 device=12").
func (d IndexDump) Key() string {
	if d.DumpHash != "" {
		return "hash " + d.DumpHash
	}
	var lines []string
	for _, w := range d.Workers {
		if w.Total == 0 {
			continue
		}
		var tiers []string
		for tier, n := range w.Blocks {
			if n != 0 {
				tiers = append(tiers, tier+"="+strconv.Itoa(n))
			}
		}
		slices.Sort(tiers)
		lines = append(lines, fmt.Sprintf("w%d/%d %s", w.Worker, w.Rank, strings.Join(tiers, " ")))
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// Fleet is mockers and router replicas on one NATS (a server or a cluster).
type Fleet struct {
	Mockers []*Mocker
	Routers []*Router
}

// FleetConfig says what StartFleet runs.
type FleetConfig struct {
	NATSURL          string
	Mockers, Routers int
	// BlockSize for every process; 0 means 16 (short prompts fill blocks).
	BlockSize int
	// MockerArgs and ServeArgs are appended to every mocker's and router's
	// flags.
	MockerArgs, ServeArgs []string
	// Ready bounds the wait for every router to be ready and to see every
	// mocker; 0 means 30 s.
	Ready time.Duration
}

// StartFleet starts the mockers (ids 1..Mockers, speedup 0 so passes take
// no wall time) and the routers (seeds 1..Routers, router1..), and waits
// until every router is ready and lists every mocker.
func StartFleet(t testing.TB, bin string, cfg FleetConfig) *Fleet {
	t.Helper()
	if cfg.BlockSize == 0 {
		cfg.BlockSize = 16
	}
	if cfg.Ready == 0 {
		cfg.Ready = 30 * time.Second
	}
	bs := strconv.Itoa(cfg.BlockSize)
	f := &Fleet{}
	for i := range cfg.Mockers {
		args := append([]string{"--block-size", bs, "--num-blocks", "4096", "--speedup-ratio", "0"}, cfg.MockerArgs...)
		f.Mockers = append(f.Mockers, StartMocker(t, bin, uint64(i+1), cfg.NATSURL, args...))
	}
	for i := range cfg.Routers {
		args := append([]string{"--block-size", bs, "--seed", strconv.Itoa(i + 1)}, cfg.ServeArgs...)
		f.Routers = append(f.Routers, StartRouter(t, bin, "router"+strconv.Itoa(i+1), cfg.NATSURL, args...))
	}
	for _, r := range f.Routers {
		f.WaitRouter(t, r, cfg.Ready)
	}
	return f
}

// WaitRouter waits until r is ready and its /debug/index lists every
// mocker with its URL (it discovered them all).
func (f *Fleet) WaitRouter(t testing.TB, r *Router, timeout time.Duration) {
	t.Helper()
	r.WaitReady(t, timeout)
	WaitFor(t, timeout, r.Name+" to discover every mocker", func() (bool, string) {
		d, err := r.Index(context.Background())
		if err != nil {
			return false, err.Error()
		}
		seen := 0
		for _, w := range d.Workers {
			if w.URL != "" {
				seen++
			}
		}
		return seen >= len(f.Mockers), fmt.Sprintf("%d of %d workers", seen, len(f.Mockers))
	})
}

// WaitIndexesAgree waits until every router's index has the same Key and
// holds blocks, and returns that key.
func (f *Fleet) WaitIndexesAgree(t testing.TB, timeout time.Duration) string {
	t.Helper()
	var key string
	WaitFor(t, timeout, "the routers' indexes to agree", func() (bool, string) {
		keys := make([]string, len(f.Routers))
		for i, r := range f.Routers {
			d, err := r.Index(context.Background())
			if err != nil {
				return false, err.Error()
			}
			keys[i] = d.Key()
		}
		for i := range keys {
			if keys[i] != keys[0] || keys[i] == "" {
				return false, fmt.Sprintf("%s:\n%s\n%s:\n%s", f.Routers[0].Name, keys[0], f.Routers[i].Name, keys[i])
			}
		}
		key = keys[0]
		return true, ""
	})
	return key
}

// MockerLoad is the part of a mocker's GET /load the tests read.
type MockerLoad struct {
	Running         int    `json:"num_requests_running"`
	Waiting         int    `json:"num_requests_waiting"`
	CachedBlocks    int    `json:"cached_blocks"`
	ActiveBlocks    int    `json:"active_blocks"`
	EventsPublished uint64 `json:"events_published"`
}

// Load reads the mocker's GET /load. When the mocker is idle, CachedBlocks
// is exactly what a router's index must hold for it.
func (m *Mocker) Load() (MockerLoad, error) {
	status, body, err := httpGet("http://127.0.0.1:" + strconv.Itoa(m.Port) + "/load")
	if err != nil {
		return MockerLoad{}, err
	}
	if status != http.StatusOK {
		return MockerLoad{}, fmt.Errorf("mocker%d /load: %d %s", m.ID, status, body)
	}
	var l MockerLoad
	err = json.Unmarshal([]byte(body), &l)
	return l, err
}

// WaitIndexesMatchMockers waits until every mocker is idle and every
// router's index holds exactly each mocker's cached blocks: no KV event was
// lost or applied twice on the way.
func (f *Fleet) WaitIndexesMatchMockers(t testing.TB, timeout time.Duration) {
	t.Helper()
	WaitFor(t, timeout, "the routers' indexes to hold exactly the mockers' cached blocks", func() (bool, string) {
		dumps := make([]IndexDump, len(f.Routers))
		for i, r := range f.Routers {
			d, err := r.Index(context.Background())
			if err != nil {
				return false, err.Error()
			}
			dumps[i] = d
		}
		for _, m := range f.Mockers {
			l, err := m.Load()
			if err != nil {
				return false, err.Error()
			}
			if l.Running+l.Waiting > 0 {
				return false, fmt.Sprintf("mocker%d busy", m.ID)
			}
			for i, d := range dumps {
				if got := d.Blocks(m.ID); got != l.CachedBlocks {
					return false, fmt.Sprintf("%s holds %d blocks of worker %d, which caches %d", f.Routers[i].Name, got, m.ID, l.CachedBlocks)
				}
			}
		}
		return true, ""
	})
}
