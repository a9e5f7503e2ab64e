package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/internal/discovery"
)

// TestServeEmbeddedNATSAndReadyz: serve with neither a NATS URL nor static
// workers starts an embedded NATS server on loopback (default port 4222,
// here a free one) for workers to register in; GET /readyz answers 503
// until a worker is known and 200 after one registered; a worker of
// another block size is refused (Members().Refused) and not routed to.
func TestServeEmbeddedNATSAndReadyz(t *testing.T) {
	if p := DefaultServeConfig().NATS.Port; p != 4222 {
		t.Errorf("default embedded NATS port %d, want 4222", p)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := DefaultServeConfig()
	cfg.Listen = "127.0.0.1:0"
	cfg.NATS.Port = 0 // a free port; 4222 may be taken on a shared machine
	cfg.Frontend.LoadPollInterval = -1
	cfg.Logger = quiet
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := runServe(t, ctx, "serve", cfg)
	if u := s.NATSURL(); !strings.HasPrefix(u, "nats://127.0.0.1:") {
		t.Fatalf("embedded NATS at %q, want a loopback server", u)
	}
	readyz := func() int {
		resp, err := http.Get(s.URL() + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode
	}
	if st := readyz(); st != http.StatusServiceUnavailable {
		t.Fatalf("/readyz with no worker: %d, want 503", st)
	}
	reg := discovery.NewRegistry(s.Conn(), discovery.RegistryConfig{Logger: quiet})
	if err := reg.Register(ctx, discovery.Worker{ID: 2, URL: "http://127.0.0.1:2", BlockSize: 16}); err != nil {
		t.Fatal(err)
	}
	if err := reg.Register(ctx, discovery.Worker{ID: 1, URL: "http://127.0.0.1:1", BlockSize: 64}); err != nil {
		t.Fatal(err)
	}
	deadline := time.NewTimer(20 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for readyz() != http.StatusOK || s.Members().Refused() != 1 {
		select {
		case <-deadline.C:
			t.Fatalf("/readyz %d, refused %d: want 200 and 1 after registrations", readyz(), s.Members().Refused())
		case <-tick.C:
		}
	}
	if st := s.Frontend().Router().Stats(); st.Workers != 1 {
		t.Errorf("router has %d workers, want 1 (block size 16 refused)", st.Workers)
	}
}

// freePort returns a loopback TCP port that was free a moment ago (for ZMQ
// endpoints, which the mocker binds by address).
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestServeStaticZMQFleet: serve --no-nats with a --worker carrying zmq= and
// replay= endpoints (docs/engines.md: a static fleet of vLLM engines
// publishing KV events over ZMQ) indexes the worker's events: a repeated long prompt
// finds its blocks cached on that worker.
func TestServeStaticZMQFleet(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pub := fmt.Sprintf("tcp://127.0.0.1:%d", freePort(t))
	replay := fmt.Sprintf("tcp://127.0.0.1:%d", freePort(t))
	mc := DefaultMockerConfig()
	mc.Listen = "127.0.0.1:0"
	mc.ZMQPub, mc.ZMQReplay = pub, replay
	mc.Mocker.Engine.SpeedupRatio = 0
	mc.Logger = quiet
	m, err := NewMocker(mc)
	if err != nil {
		t.Fatal(err)
	}
	mDone := make(chan error, 1)
	go func() { mDone <- m.Run(ctx) }()
	defer func() { cancel(); <-mDone }()

	cfg := DefaultServeConfig()
	cfg.Listen = "127.0.0.1:0"
	cfg.NoNATS = true
	cfg.Workers = []string{m.URL() + ",id=1,zmq=" + pub + ",replay=" + replay + ",bs=64"}
	cfg.Frontend.LoadPollInterval = -1
	cfg.Logger = quiet
	s := runServe(t, ctx, "serve", cfg)
	if s.NATSURL() != "" {
		t.Fatalf("--no-nats serve connected to NATS %s", s.NATSURL())
	}
	post := func(prompt string) (int, int) {
		body := `{"prompt":"` + prompt + `","max_tokens":1}`
		resp, err := http.Post(s.URL()+"/v1/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		n, _ := strconv.Atoi(resp.Header.Get("x-kvrouter-overlap-blocks"))
		return resp.StatusCode, n
	}
	indexed := func() int {
		total := 0
		for _, w := range s.Frontend().IndexSummaries().Workers {
			total += w.Total
		}
		return total
	}
	// ZMQ's slow joiner: events published before the SUB connected are
	// lost until a later message shows the gap (then replay fills it), so
	// send fresh long prompts until blocks reach the index.
	var sent []string
	deadline := time.NewTimer(20 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for indexed() == 0 {
		prompt := strings.Repeat(fmt.Sprintf("static fleet prompt %d publishes KV events over ZMQ; ", len(sent)), 40)
		if code, _ := post(prompt); code != http.StatusOK {
			t.Fatalf("completion: %d", code)
		}
		sent = append(sent, prompt)
		select {
		case <-deadline.C:
			t.Fatalf("ZMQ events never reached the index after %d prompts", len(sent))
		case <-tick.C:
		}
	}
	// The indexed blocks are some sent prompt's: sending it again finds
	// them on worker 1.
	best := 0
	for _, p := range sent {
		if _, n := post(p); n > best {
			best = n
		}
	}
	if best == 0 {
		t.Fatalf("index holds %d blocks but no resent prompt overlaps them", indexed())
	}
}
