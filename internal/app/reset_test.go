package app

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvrouter/kvrouter/internal/discovery"
	"github.com/kvrouter/kvrouter/internal/eventplane"
	"github.com/kvrouter/kvrouter/internal/eventplane/eventplanetest"
	"github.com/kvrouter/kvrouter/internal/replica"
	"github.com/kvrouter/kvrouter/internal/snapshot"
)

// TestServeResetStates seeds one NATS with this model's state (KV events,
// a snapshot, a worker registration), another model's events and
// registration, and a snapshot lease held by another replica. serve
// --reset-states is then refused (replica.ErrLeaseHeld) and deletes
// nothing; with --reset-states-force it purges this model's events,
// snapshots and registration, leaves the other model's, and says so in
// one log line.
func TestServeResetStates(t *testing.T) {
	const model, other = "m-reset", "m-other"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	conn := eventplanetest.Embedded(t)
	for i := range 3 {
		for _, m := range []string{model, other} {
			if _, err := conn.JS.Publish(ctx, conn.Subject(m, uint64(i+1)), []byte("{}")); err != nil {
				t.Fatal(err)
			}
		}
	}
	reg := discovery.NewRegistry(conn, discovery.RegistryConfig{})
	for id, m := range map[uint64]string{1: model, 2: other} {
		if err := reg.Register(ctx, discovery.Worker{ID: id, Model: m, URL: "http://127.0.0.1:1", BlockSize: DefaultBlockSize}); err != nil {
			t.Fatal(err)
		}
	}
	snaps := snapshot.NewManager(conn, snapshot.Config{})
	if err := snaps.Save(ctx, &snapshot.Snapshot{Position: eventplane.Position{StreamSeq: 2}, Created: time.Now()}); err != nil {
		t.Fatal(err)
	}
	leaseCtx, stopLease := context.WithCancel(ctx)
	defer stopLease()
	l, err := replica.NewLease(conn, replica.LeaseConfig{Bucket: "kvrouter_replicas", Key: "snapshot-writer." + model,
		Holder: "replica-b", TTL: 10 * time.Second, Renew: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = l.Run(leaseCtx, func(ctx context.Context) { <-ctx.Done() }) }()
	waitUntil(t, 10*time.Second, "replica-b to hold the lease", func() (bool, string) { return l.Held(), "" })

	count := func(m string) uint64 {
		st, err := conn.JS.Stream(ctx, conn.Config().Stream.Name)
		if err != nil {
			t.Fatal(err)
		}
		info, err := st.Info(ctx, jetstream.WithSubjectFilter(conn.EventFilter(m)))
		if err != nil {
			t.Fatal(err)
		}
		var n uint64
		for _, k := range info.State.Subjects {
			n += k
		}
		return n
	}
	registered := func() map[uint64]bool {
		ws, err := reg.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		out := map[uint64]bool{}
		for _, w := range ws {
			out[w.ID] = true
		}
		return out
	}
	nSnaps := func() int {
		s, err := snaps.Latest(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if s == nil {
			return 0
		}
		return 1
	}
	serveCfg := func(logs *syncBuffer, force bool) ServeConfig {
		cfg := DefaultServeConfig()
		cfg.Listen = "127.0.0.1:0"
		cfg.NATS.URL = conn.ClientURL()
		cfg.Frontend.Model = model
		cfg.Tokenizer = "builtin" // a model without a tokenizer.json: route with cl100k
		cfg.Frontend.LoadPollInterval = -1
		cfg.Replica.ID = "replica-a"
		cfg.ResetStates, cfg.ResetForce = true, force
		cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
		return cfg
	}

	var logs syncBuffer
	s, err := NewServe(serveCfg(&logs, false))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Run(ctx); !errors.Is(err, replica.ErrLeaseHeld) || !strings.Contains(err.Error(), "replica-b") {
		t.Fatalf("reset under another replica's lease: %v, want ErrLeaseHeld naming replica-b", err)
	}
	if count(model) != 3 || nSnaps() != 1 || !registered()[1] {
		t.Fatalf("a refused reset deleted state: events %d, snapshots %d, registered %v", count(model), nSnaps(), registered())
	}

	var forced syncBuffer
	runServe(t, ctx, "serve", serveCfg(&forced, true))
	if n := count(model); n != 0 {
		t.Errorf("model's events after reset: %d, want 0", n)
	}
	if n := count(other); n != 3 {
		t.Errorf("other model's events after reset: %d, want 3", n)
	}
	if nSnaps() != 0 {
		t.Error("a snapshot survived the reset")
	}
	if r := registered(); r[1] || !r[2] {
		t.Errorf("registrations after reset %v, want only worker 2 (the other model's)", r)
	}
	out := forced.String()
	if strings.Count(out, "reset states") != 1 || !strings.Contains(out, "events_purged=3") ||
		!strings.Contains(out, "snapshots_deleted=1") || !strings.Contains(out, "registrations_deleted=1") ||
		!strings.Contains(out, "forced_over_lease_holder=replica-b") {
		t.Errorf("want one reset log line with the counts, got:\n%s", out)
	}
}
