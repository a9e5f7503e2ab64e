package discovery_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/internal/discovery"
	"github.com/kvrouter/kvrouter/internal/eventplane"
	"github.com/kvrouter/kvrouter/internal/eventplane/eventplanetest"
	"github.com/nats-io/nats.go/jetstream"
)

// history records every join (by epoch) and leave below a Fleet.
type history struct {
	mu     sync.Mutex
	joins  []string
	leaves int
	cur    map[uint64]discovery.Worker
}

func (h *history) Join(w discovery.Worker) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.joins = append(h.joins, w.Epoch)
	h.cur[w.ID] = w
	return nil
}

func (h *history) Leave(id uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.leaves++
	delete(h.cur, id)
}

func (h *history) state() (joins []string, leaves int, epoch string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.joins...), h.leaves, h.cur[1].Epoch
}

type dupFixture struct {
	conn  *eventplane.Conn
	cfg   discovery.RegistryConfig
	fleet *discovery.Fleet
	h     *history
	ctx   context.Context
	wg    sync.WaitGroup
}

func newDupFixture(t *testing.T) *dupFixture {
	conn := eventplanetest.Embedded(t)
	ttl := time.Second
	f := &dupFixture{conn: conn, cfg: discovery.RegistryConfig{TTL: ttl, Heartbeat: ttl / 10, Logger: eventplanetest.Quiet},
		h: &history{cur: map[uint64]discovery.Worker{}}}
	f.fleet = discovery.NewFleet(16, f.h, eventplanetest.Quiet)
	ctx, cancel := context.WithCancel(context.Background())
	f.ctx = ctx
	t.Cleanup(func() { cancel(); f.wg.Wait() })
	f.wg.Add(1)
	go func() { defer f.wg.Done(); _ = discovery.NewRegistry(conn, f.cfg).Watch(ctx, f.fleet) }()
	return f
}

// instance runs one worker instance's Keepalive; the returned func stops
// it and waits for its deregistration.
func (f *dupFixture) instance(reg *discovery.Registry, epoch, url string) func() {
	ctx, cancel := context.WithCancel(f.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = reg.Keepalive(ctx, discovery.Worker{ID: 1, URL: url, Epoch: epoch})
	}()
	return func() { cancel(); <-done }
}

func (f *dupFixture) entryEpoch(t *testing.T) string {
	t.Helper()
	kv, err := f.conn.JS.KeyValue(context.Background(), "kvrouter_workers")
	if err != nil {
		t.Fatal(err)
	}
	e, err := kv.Get(context.Background(), "w.1")
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	w, err := discovery.DecodeRegistration(e.Key(), e.Value())
	if err != nil {
		t.Fatal(err)
	}
	return w.Epoch
}

// TestDuplicateInstanceRefused: a second live instance registering a
// worker id already held is refused (counted), never written, so the
// router never flips between the two (each flip cleared the worker's index
// entries); when it exits it deletes nothing, and the real worker stays
// registered. Before: the two registrations alternated at every heartbeat
// and the duplicate's exit deleted the real worker's entry.
func TestDuplicateInstanceRefused(t *testing.T) {
	f := newDupFixture(t)
	regA, regB := discovery.NewRegistry(f.conn, f.cfg), discovery.NewRegistry(f.conn, f.cfg)
	stopA := f.instance(regA, "aaaa", "http://a:1")
	eventplanetest.WaitFor(t, 10*time.Second, "a joined", func() bool { _, _, e := f.h.state(); return e == "aaaa" })
	stopB := f.instance(regB, "bbbb", "http://b:1")
	eventplanetest.WaitFor(t, 10*time.Second, "b refused three times (or, before, b joined)", func() bool {
		joins, _, _ := f.h.state()
		return regB.Duplicates() >= 3 || len(joins) > 1
	})
	stopB()
	if joins, leaves, epoch := f.h.state(); len(joins) != 1 || leaves != 0 || epoch != "aaaa" {
		t.Fatalf("joins %v, leaves %d, member epoch %q: want a alone, never left", joins, leaves, epoch)
	}
	if e := f.entryEpoch(t); e != "aaaa" {
		t.Fatalf("after the duplicate exited the registry holds %q, want a's", e)
	}
	// a leaves cleanly: its own entry goes, and the router sees it.
	stopA()
	eventplanetest.WaitFor(t, 10*time.Second, "a left", func() bool { _, l, _ := f.h.state(); return l == 1 })
	if e := f.entryEpoch(t); e != "" {
		t.Fatalf("a's exit left %q registered", e)
	}
}

// TestDuplicateWriterRefusedByWatch: a writer without the check (an older
// worker: unconditional puts) claiming a live member's id is refused by
// the router's watch (reason "duplicate", listed in Duplicates) and never
// flips the member; the member, finding its entry overwritten, writes it
// back.
func TestDuplicateWriterRefusedByWatch(t *testing.T) {
	f := newDupFixture(t)
	reasons := make(chan string, 100)
	f.fleet.OnRefused = func(r string) {
		select {
		case reasons <- r:
		default:
		}
	}
	regA, old := discovery.NewRegistry(f.conn, f.cfg), discovery.NewRegistry(f.conn, f.cfg)
	stopA := f.instance(regA, "aaaa", "http://a:1")
	defer stopA()
	eventplanetest.WaitFor(t, 10*time.Second, "a joined", func() bool { _, _, e := f.h.state(); return e == "aaaa" })
	for range 5 {
		if err := old.Register(f.ctx, discovery.Worker{ID: 1, URL: "http://b:1", Epoch: "bbbb"}); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case r := <-reasons:
		if r != discovery.ReasonDuplicate {
			t.Fatalf("refused with reason %q", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the duplicate was not refused")
	}
	eventplanetest.WaitFor(t, 10*time.Second, "a wrote its entry back", func() bool { return f.entryEpoch(t) == "aaaa" })
	if joins, leaves, _ := f.h.state(); len(joins) != 1 || leaves != 0 {
		t.Fatalf("joins %v, leaves %d: the member flipped", joins, leaves)
	}
	if d := f.fleet.Duplicates(); len(d) != 1 || d[0].Epoch != "bbbb" || d[0].Holder != "aaaa" {
		t.Fatalf("duplicates %+v", d)
	}
	if regA.Duplicates() == 0 {
		t.Fatal("a did not count the overwrite")
	}
}

// An older registration (no epoch) still registers, heartbeats and leaves.
func TestRegistrationWithoutEpoch(t *testing.T) {
	f := newDupFixture(t)
	stop := f.instance(discovery.NewRegistry(f.conn, f.cfg), "", "http://a:1")
	eventplanetest.WaitFor(t, 10*time.Second, "joined", func() bool { j, _, _ := f.h.state(); return len(j) == 1 })
	stop()
	eventplanetest.WaitFor(t, 10*time.Second, "left", func() bool { _, l, _ := f.h.state(); return l == 1 })
}

// A new epoch at the registered URL is a restart, not a duplicate: it
// takes the id over at once (the router drops the old process's cache
// state), though the dead instance's entry has not expired.
func TestRestartAtSameURLSupersedes(t *testing.T) {
	f := newDupFixture(t)
	crashed := discovery.NewRegistry(f.conn, f.cfg)
	if err := crashed.Register(f.ctx, discovery.Worker{ID: 1, URL: "http://a:1", Epoch: "aaaa"}); err != nil {
		t.Fatal(err)
	}
	eventplanetest.WaitFor(t, 10*time.Second, "a joined", func() bool { _, _, e := f.h.state(); return e == "aaaa" })
	reg := discovery.NewRegistry(f.conn, f.cfg)
	stop := f.instance(reg, "cccc", "http://a:1")
	defer stop()
	eventplanetest.WaitFor(t, 10*time.Second, "the restarted instance joined", func() bool {
		_, _, e := f.h.state()
		return e == "cccc"
	})
	if reg.Duplicates() != 0 || f.fleet.Restarts() != 1 {
		t.Fatalf("duplicates %d, restarts %d: want a restart", reg.Duplicates(), f.fleet.Restarts())
	}
}
