package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/internal/discovery"
	"github.com/kvrouter/kvrouter/internal/eventplane"
	"github.com/kvrouter/kvrouter/kvevents"
)

type recSink struct {
	mu  sync.Mutex
	got []string
}

func (r *recSink) Apply(ev *kvevents.Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, fmt.Sprintf("%d#%d", ev.WorkerID, ev.EventID))
	return nil
}

func (r *recSink) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return fmt.Sprint(r.got)
}

// TestMemberGate: before the registry is read, events pass; after, events
// of an unknown worker are held, applied in order (before its next event)
// when it joins, or dropped after holdFor. Only the drop is counted: a held
// event that is applied was never rejected.
func TestMemberGate(t *testing.T) {
	known := map[uint64]bool{1: true}
	counts := map[string]uint64{}
	sink := &recSink{}
	g := newMemberGate(sink, func(id uint64) bool { return known[id] }, func(w uint64, r string, n uint64) {
		counts[fmt.Sprintf("%d:%s", w, r)] += n
	})
	ev := func(w, id uint64) *kvevents.Event {
		return &kvevents.Event{WorkerID: w, EventID: id, Kind: kvevents.KindStored, Blocks: []kvevents.Block{{Hash: id, Local: id}}}
	}
	_ = g.Apply(ev(2, 1)) // registry not read yet: passes
	g.Synced()
	_ = g.Apply(ev(1, 1))
	_ = g.Apply(ev(2, 2)) // held
	_ = g.Apply(ev(3, 1)) // held
	_ = g.Apply(ev(2, 3)) // held
	if got, want := sink.String(), "[2#1 1#1]"; got != want {
		t.Fatalf("applied %s, want %s", got, want)
	}
	known[2] = true
	_ = g.Apply(ev(2, 4)) // joined meanwhile: its held events go first
	if got, want := sink.String(), "[2#1 1#1 2#2 2#3 2#4]"; got != want {
		t.Fatalf("applied %s, want %s", got, want)
	}
	g.mu.Lock()
	g.expireLocked(time.Now().Add(time.Minute))
	g.mu.Unlock()
	if g.Held() != 0 || counts["3:unregistered_expired"] != 1 || len(counts) != 1 {
		t.Fatalf("held %d, counts %v", g.Held(), counts)
	}
	known[3] = true
	g.Joined(3)
	if got, want := sink.String(), "[2#1 1#1 2#2 2#3 2#4]"; got != want {
		t.Fatalf("expired events applied: %s", got)
	}
	// Past the bounds, the oldest worker's held events are dropped.
	g.maxEvents = 1
	_ = g.Apply(ev(4, 1))
	_ = g.Apply(ev(5, 1))
	if g.Held() != 1 || counts["4:unregistered"] != 1 || len(counts) != 2 {
		t.Fatalf("over the bounds: held %d, counts %v", g.Held(), counts)
	}
}

// TestServeUnregisteredEvents: serve on NATS keeps the KV events of a
// worker that never registered out of the index (held, not counted as
// rejected), and applies them when the worker registers.
func TestServeUnregisteredEvents(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := DefaultServeConfig()
	cfg.Listen = "127.0.0.1:0"
	cfg.NATS.Port = 0
	cfg.NATS.StoreDir = t.TempDir()
	cfg.Frontend.LoadPollInterval = -1
	cfg.Logger = quiet
	s := runServe(t, ctx, "serve", cfg)
	// Ready waits for the registry's first read, so the gate is strict:
	// an unregistered worker's events are held from here on.
	if !s.gate.strict.Load() {
		t.Fatal("Ready closed before the registry's first read (gate not strict)")
	}
	conn := s.Conn()
	pub := eventplane.NewPublisher(conn, eventplane.PublisherConfig{Model: cfg.Frontend.Model, Logger: quiet})
	pctx, pcancel := context.WithCancel(ctx)
	pdone := make(chan struct{})
	go func() { defer close(pdone); _ = pub.Run(pctx) }()
	defer func() { pcancel(); <-pdone }()
	blocks := func(w uint64) int {
		for _, x := range s.Frontend().IndexSummaries().Workers {
			if x.Worker == w {
				return x.Total
			}
		}
		return 0
	}
	ev := stored(7, 1, 3)
	if err := pub.Publish(ctx, ev); err != nil {
		t.Fatal(err)
	}
	if err := pub.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 20*time.Second, "events of worker 7 held", func() (bool, string) {
		return s.gate.Held() == 1, fmt.Sprint(s.gate.Held())
	})
	if n := blocks(7); n != 0 {
		t.Fatalf("an unregistered worker's %d blocks entered the index", n)
	}
	reg := discovery.NewRegistry(conn, discovery.RegistryConfig{Logger: quiet})
	if err := reg.Register(ctx, discovery.Worker{ID: 7, URL: "http://127.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 20*time.Second, "held events applied on registration", func() (bool, string) {
		return blocks(7) == 3, fmt.Sprintf("%d blocks", blocks(7))
	})
	if c := s.Frontend().IngestCounts(7); len(c) != 0 {
		t.Fatalf("held, then applied events counted as %v", c)
	}
}

// TestResetWorkerEvents: the hook for a worker that restarted (a new
// registration epoch) clears its blocks on every rank, and only its.
func TestResetWorkerEvents(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := DefaultServeConfig()
	cfg.Listen = "127.0.0.1:0"
	cfg.NoNATS = true
	cfg.StaticWorkers = []discovery.Worker{{ID: 1, URL: "http://127.0.0.1:1", DPSize: 2}, {ID: 2, URL: "http://127.0.0.1:2"}}
	cfg.Frontend.LoadPollInterval = -1
	cfg.Logger = quiet
	s := runServe(t, ctx, "serve", cfg)
	for _, ev := range []kvevents.Event{stored(1, 1, 3), stored(2, 1, 2)} {
		_ = s.Frontend().Apply(&ev)
	}
	r1 := stored(1, 1, 4)
	r1.DPRank = 1
	_ = s.Frontend().Apply(&r1)
	s.ResetWorkerEvents(1, 2)
	if err := s.Frontend().Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for _, x := range s.Frontend().IndexSummaries().Workers {
		if (x.Worker == 1 && x.Total != 0) || (x.Worker == 2 && x.Total != 2) {
			t.Fatalf("worker %d rank %d holds %d blocks after resetting worker 1", x.Worker, x.DPRank, x.Total)
		}
	}
}
