package router_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/loads"
	"github.com/kvrouter/kvrouter/router"
)

var t0 = time.Unix(1000, 0)

// pair is two replicas; a's bookings are queued in out for the test to
// deliver to b (or lose).
type pair struct {
	a, b     *router.Router
	out      []router.Booking
	bEmitted int
}

func newPair(t *testing.T, edit func(*router.Config)) *pair {
	t.Helper()
	p := &pair{}
	cfg := router.DefaultConfig()
	cfg.BlockSize = 4
	if edit != nil {
		edit(&cfg)
	}
	mk := func(seed uint64, ev router.Events) *router.Router {
		r, err := router.New(cfg, router.Options{Rand: rand.New(rand.NewPCG(seed, 1)), Events: ev})
		if err != nil {
			t.Fatal(err)
		}
		for id := uint64(1); id <= 3; id++ {
			if err := r.AddWorker(router.WorkerInfo{ID: id, MaxNumBatchedTokens: 8192, TotalKVBlocks: 1000}); err != nil {
				t.Fatal(err)
			}
		}
		return r
	}
	p.a = mk(1, router.Events{OnBooking: func(b router.Booking) {
		b.Locals = slices.Clone(b.Locals)
		p.out = append(p.out, b)
	}})
	p.b = mk(2, router.Events{OnBooking: func(router.Booking) { p.bEmitted++ }})
	return p
}

// deliver applies a's queued bookings to b.
func (p *pair) deliver(t *testing.T, now time.Time) {
	t.Helper()
	for _, bk := range p.out {
		if err := p.b.ApplyRemote("A", bk, now); err != nil {
			t.Fatalf("apply %s %s: %v", bk.Kind, bk.ID, err)
		}
	}
	p.out = p.out[:0]
}

func tokens(n, salt int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = uint32(salt*1000 + i)
	}
	return out
}

func (p *pair) sameLoads(t *testing.T) {
	t.Helper()
	for id := uint64(1); id <= 3; id++ {
		w := kvevents.Worker{ID: id}
		if la, lb := p.a.Load(w), p.b.Load(w); la != lb {
			t.Fatalf("w%d: a %s, b %s", id, la, lb)
		}
	}
}

// A remote booking counts in b's costs exactly like the same booking made
// locally: the same next request gets identical candidate breakdowns
// (prefill and decode terms) on both replicas.
func TestRemoteBookingsCountLikeLocal(t *testing.T) {
	p := newPair(t, nil)
	ctx := context.Background()
	for i := range 5 {
		if _, err := p.a.Route(ctx, router.Request{ID: fmt.Sprint("r", i), Tokens: tokens(16+4*i, i%2)}, t0); err != nil {
			t.Fatal(err)
		}
	}
	if len(p.out) != 5 || p.out[0].Kind != router.BookRoute || len(p.out[0].Locals) != 4 || p.out[0].ISL != 16 || p.out[0].PrefillTokens != 16 {
		t.Fatalf("bookings %+v", p.out)
	}
	p.deliver(t, t0)
	p.sameLoads(t)
	if err := p.a.PrefillDone("r1", t0); err != nil {
		t.Fatal(err)
	}
	if err := p.a.Free("r2", t0); err != nil {
		t.Fatal(err)
	}
	p.deliver(t, t0)
	p.sameLoads(t)

	req := router.Request{ID: "next", Tokens: tokens(24, 0)}
	da, err := p.a.Route(ctx, req, t0)
	if err != nil {
		t.Fatal(err)
	}
	db, err := p.b.Route(ctx, req, t0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range da.Candidates {
		ca, cb := da.Candidates[i], db.Candidates[i]
		ca.Prob, cb.Prob = 0, 0 // ties may differ by rng
		if ca != cb {
			t.Errorf("candidate %d: a %s, b %s", i, ca, cb)
		}
	}
	if p.bEmitted != 1 {
		t.Errorf("b reported %d bookings, want its own route only (remote ones are not echoed)", p.bEmitted)
	}

	// The breakdown tells b's own part from a's.
	var sawRemote bool
	for _, wl := range p.b.LoadBreakdown() {
		for _, r := range wl.Remote {
			sawRemote = sawRemote || (r.Origin == "A" && r.Load.Requests > 0)
		}
		if wl.Worker == db.Worker && wl.Local.Requests != 1 {
			t.Errorf("b's local part on w%s: %s", wl.Worker, wl.Local)
		}
	}
	if !sawRemote {
		t.Errorf("no remote part in %v", p.b.LoadBreakdown())
	}

	// a goes silent: b drops its bookings, keeps its own.
	if n := p.b.DropOrigin("A"); n != 4 {
		t.Errorf("dropped %d, want 4", n)
	}
	if st := p.b.Stats(); st.Active != 1 {
		t.Errorf("b active after drop: %d", st.Active)
	}
}

// A remote booking whose free was lost is swept by the stale limit; the
// sweep neither returns nor reports it (it is not b's request).
func TestRemoteLostFreeIsSwept(t *testing.T) {
	p := newPair(t, func(c *router.Config) { c.Loads = loads.Config{StaleAfter: time.Minute} })
	if _, err := p.a.Route(context.Background(), router.Request{ID: "x", Tokens: tokens(8, 3)}, t0); err != nil {
		t.Fatal(err)
	}
	p.deliver(t, t0)
	if err := p.a.Free("x", t0); err != nil {
		t.Fatal(err)
	}
	p.out = p.out[:0] // the free is lost
	if st := p.b.Stats(); st.Active != 1 {
		t.Fatalf("b active %d", st.Active)
	}
	if ids := p.b.Sweep(t0.Add(2 * time.Minute)); len(ids) != 0 {
		t.Errorf("sweep returned remote ids %q", ids)
	}
	if st := p.b.Stats(); st.Active != 0 || st.Swept != 1 || p.bEmitted != 0 {
		t.Errorf("after sweep: %+v, b emitted %d", st, p.bEmitted)
	}
	// A late free (or a duplicate route) is reported, not fatal.
	err := p.b.ApplyRemote("A", router.Booking{Kind: router.BookFree, ID: "x"}, t0)
	if !errors.Is(err, loads.ErrUnknownRequest) {
		t.Errorf("late free: %v", err)
	}
	if err := p.b.ApplyRemote("", router.Booking{Kind: router.BookFree, ID: "x"}, t0); !errors.Is(err, router.ErrBadRequest) {
		t.Errorf("no origin: %v", err)
	}
}

// Session bindings travel too: b sends the session's next request where a
// bound it.
func TestRemoteAffinity(t *testing.T) {
	p := newPair(t, func(c *router.Config) { c.Affinity.Enabled = true })
	ctx := context.Background()
	// a's load on the bound worker (delivered too) steers b elsewhere
	// unless the binding arrived.
	d, err := p.a.Route(ctx, router.Request{ID: "s1", Session: "chat", Tokens: tokens(40, 5)}, t0)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.out) != 2 || p.out[1].Kind != router.BookBind || p.out[1].Session != "chat" || p.out[1].Worker != d.Worker {
		t.Fatalf("bookings %+v", p.out)
	}
	p.deliver(t, t0)
	db, err := p.b.Route(ctx, router.Request{ID: "s2", Session: "chat", Tokens: tokens(8, 6)}, t0)
	if err != nil {
		t.Fatal(err)
	}
	if !db.Affinity || db.Worker != d.Worker {
		t.Fatalf("b routed the session to w%s (affinity %v), a bound it to w%s", db.Worker, db.Affinity, d.Worker)
	}
}

// Requests dispatched by Release are reported too, with their own copy of
// the hashes.
func TestReleasedBookings(t *testing.T) {
	p := newPair(t, func(c *router.Config) { c.Queue.Threshold = 0.001 })
	ctx := context.Background()
	var ids []string
	for i := range 6 {
		id := fmt.Sprint("q", i)
		d, err := p.a.Route(ctx, router.Request{ID: id, Tokens: tokens(64, i)}, t0)
		if err != nil {
			t.Fatal(err)
		}
		if !d.Queued {
			ids = append(ids, id)
		}
	}
	if p.a.Pending() == 0 {
		t.Fatal("nothing queued")
	}
	for _, id := range ids {
		if err := p.a.Free(id, t0); err != nil {
			t.Fatal(err)
		}
	}
	rel := p.a.Release(t0)
	if len(rel) == 0 {
		t.Fatal("nothing released")
	}
	p.deliver(t, t0)
	p.sameLoads(t)
	if st := p.b.Stats(); st.Active != p.a.Stats().Active || st.Active == 0 {
		t.Fatalf("b active %d, a %d", st.Active, p.a.Stats().Active)
	}
}
