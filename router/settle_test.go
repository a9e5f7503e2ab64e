package router

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

// settleRouters returns routers with the default config at block size 4
// and four workers: one per Options (Rand seeded alike).
func settleRouters(t *testing.T, cfg Config, opts ...Options) []*Router {
	t.Helper()
	var out []*Router
	for _, o := range opts {
		o.Rand = rand.New(rand.NewPCG(3, 9))
		r, err := New(cfg, o)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 4 {
			if err := r.AddWorker(WorkerInfo{ID: uint64(i + 1), MaxNumBatchedTokens: 64}); err != nil {
				t.Fatal(err)
			}
		}
		out = append(out, r)
	}
	return out
}

func settleConfig() Config {
	cfg := DefaultConfig()
	cfg.BlockSize = 4
	return cfg
}

// TestDeferredRouteSeesBooking: two routes back to back without a Settle;
// the second sees the first's booking (its worker credited the active
// prefix) and decides as a router that books at once does.
func TestDeferredRouteSeesBooking(t *testing.T) {
	rs := settleRouters(t, settleConfig(), Options{Deferred: true}, Options{}, Options{})
	def, sync, fresh := rs[0], rs[1], rs[2]
	ctx, now := context.Background(), time.Unix(100, 0)
	p := []uint64{11, 12, 13, 14, 15, 16, 17, 18}
	a := Request{ID: "a", Locals: p, OutputTokens: 16}
	da, err := def.Route(ctx, a, now)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sync.Route(ctx, a, now); err != nil {
		t.Fatal(err)
	}
	if st := def.SettleStats(); st.Unsettled != 1 || st.RouteSettled != 0 {
		t.Fatalf("after one deferred route: %+v, want 1 unsettled", st)
	}
	b := Request{ID: "b", Locals: p, OutputTokens: 16}
	db, err := def.Route(ctx, b, now)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := sync.Route(ctx, b, now)
	if !reflect.DeepEqual(db, want) {
		t.Fatalf("deferred\n%+v\nbooked at once\n%+v", db, want)
	}
	if st := def.SettleStats(); st.Unsettled != 1 || st.RouteSettled != 1 {
		t.Fatalf("after the second route: %+v, want a's booking settled by it and b's pending", st)
	}
	for _, c := range db.Candidates {
		if c.Worker == da.Worker && c.Overlap[0] != len(p) {
			t.Errorf("b's breakdown of a's worker %s: device overlap %d, want a's active %d blocks", c.Worker, c.Overlap[0], len(p))
		}
	}
	// The test shows something: without a's booking b decides otherwise.
	if alone, _ := fresh.Route(ctx, b, now); reflect.DeepEqual(alone.Candidates, db.Candidates) {
		t.Fatal("b's decision does not depend on a's booking")
	}
}

// TestFreeLaterThenRouteSeesFree: an end queued with FreeLater and not
// settled is applied before the next route decides.
func TestFreeLaterThenRouteSeesFree(t *testing.T) {
	rs := settleRouters(t, settleConfig(), Options{Deferred: true}, Options{}, Options{})
	def, sync, kept := rs[0], rs[1], rs[2]
	ctx, now := context.Background(), time.Unix(100, 0)
	a := Request{ID: "a", Locals: []uint64{1, 2, 3, 4, 5, 6}, OutputTokens: 40}
	for _, r := range rs {
		if _, err := r.Route(ctx, a, now); err != nil {
			t.Fatal(err)
		}
	}
	now = now.Add(time.Millisecond)
	def.FreeLater("a", now)
	if err := sync.Free("a", now); err != nil {
		t.Fatal(err)
	}
	if st := def.SettleStats(); st.Unsettled != 2 {
		t.Fatalf("%+v: want a's booking and end pending", st)
	}
	b := Request{ID: "b", Locals: []uint64{1, 2, 3, 9}, OutputTokens: 40}
	db, err := def.Route(ctx, b, now)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := sync.Route(ctx, b, now)
	if !reflect.DeepEqual(db, want) {
		t.Fatalf("deferred\n%+v\nfreed at once\n%+v", db, want)
	}
	if held, _ := kept.Route(ctx, b, now); reflect.DeepEqual(held.Candidates, db.Candidates) {
		t.Fatal("b's decision does not depend on a's end")
	}
	if got, want := def.String(), sync.String(); got != want {
		t.Errorf("state\n%s\nwant\n%s", got, want)
	}
}

// TestDeferredDuplicateID: a route's id is active from its decision on,
// settled or not.
func TestDeferredDuplicateID(t *testing.T) {
	def := settleRouters(t, settleConfig(), Options{Deferred: true})[0]
	ctx, now := context.Background(), time.Unix(100, 0)
	req := Request{ID: "a", Locals: []uint64{1, 2}}
	if _, err := def.Route(ctx, req, now); err != nil {
		t.Fatal(err)
	}
	if _, err := def.Route(ctx, req, now); !errors.Is(err, ErrBadRequest) {
		t.Fatalf("second route of a: %v, want ErrBadRequest", err)
	}
	if st := def.Stats(); st.Active != 1 || st.Routed != 1 {
		t.Fatalf("%+v: want a active once", st)
	}
}

// TestSettleReportsFree: FreeLater's BookFree is reported by the Settle
// that applies it, once; an unknown id is dropped silently.
func TestSettleReportsFree(t *testing.T) {
	var got []Booking
	def := settleRouters(t, settleConfig(), Options{Deferred: true, Events: Events{OnBooking: func(b Booking) {
		b.Locals = nil
		got = append(got, b)
	}}})[0]
	ctx, now := context.Background(), time.Unix(100, 0)
	d, err := def.Route(ctx, Request{ID: "a", Locals: []uint64{1, 2}}, now)
	if err != nil {
		t.Fatal(err)
	}
	def.FreeLater("a", now)
	def.FreeLater("nobody", now)
	if len(got) != 1 || got[0].Kind != BookRoute {
		t.Fatalf("before Settle: %+v, want a's route only", got)
	}
	def.Settle()
	def.Settle()
	want := Booking{Kind: BookFree, ID: "a", Worker: d.Worker}
	if len(got) != 2 || !reflect.DeepEqual(got[1], want) {
		t.Fatalf("after Settle: %+v, want a's route then %+v", got, want)
	}
	if st := def.Stats(); st.Active != 0 {
		t.Fatalf("%+v: want nothing active", st)
	}
}

// TestDeferredSameDecisions routes one random workload (shared prefixes,
// ends at once to past the predictions' TTL, some failures) on a router
// that books at once and on deferred ones, which end with FreeLater and
// settle only now and then, so most routes find work pending: with the
// predicted index recorded at the end (the default) and at routing
// time. Every decision, breakdowns included, and the final state must
// be the same.
func TestDeferredSameDecisions(t *testing.T) {
	cfg := settleConfig()
	rs := settleRouters(t, cfg, Options{}, Options{Deferred: true}, Options{}, Options{Deferred: true})
	sync, def, syncR, defR := rs[0], rs[1], rs[2], rs[3]
	syncR.predictAtEnd, defR.predictAtEnd = false, false
	end := func(r *Router, id string, fail bool, now time.Time) error {
		switch {
		case fail:
			return r.Fail(id, now)
		case r.deferred:
			r.FreeLater(id, now)
			return nil
		}
		return r.Free(id, now)
	}
	rng := rand.New(rand.NewPCG(5, 8))
	before := func(time.Time) {
		if rng.IntN(4) == 0 {
			def.Settle()
			defR.Settle()
		}
	}
	randomWorkload(t, rng, rs, cfg.Predict.TTL, end, before, func(i int, ds []Decision, errs []error) {
		for j, err := range errs {
			if err != nil {
				t.Fatalf("request %d, router %d: %v", i, j, err)
			}
		}
		if !reflect.DeepEqual(ds[0], ds[1]) || !reflect.DeepEqual(ds[2], ds[3]) {
			t.Fatalf("request %d: deferred decisions differ:\n%+v\n%+v\n%+v\n%+v", i, ds[0], ds[1], ds[2], ds[3])
		}
	})
	if st := def.SettleStats(); st.RouteSettled < 1000 {
		t.Fatalf("%+v: too few routes found work pending for the test to show anything", st)
	}
	if sync.String() != def.String() || syncR.String() != defR.String() {
		t.Fatal("final states differ")
	}
	if def.predict.Stats() != sync.predict.Stats() || defR.predict.Stats() != syncR.predict.Stats() {
		t.Fatalf("predicted indexes differ: %+v / %+v, %+v / %+v", def.predict.Stats(), sync.predict.Stats(), defR.predict.Stats(), syncR.predict.Stats())
	}
}

// TestDeferredConcurrent: routes and FreeLaters from several goroutines
// while another settles (run with -race); at the end every request is
// freed and nothing is pending.
func TestDeferredConcurrent(t *testing.T) {
	def := settleRouters(t, settleConfig(), Options{Deferred: true})[0]
	kick, done := make(chan struct{}, 1), make(chan struct{})
	go func() {
		defer close(done)
		for range kick {
			def.Settle()
		}
	}()
	prompts := sharingPrompts(rand.New(rand.NewPCG(2, 4)), 16)
	errs := make(chan error, 4)
	for g := range 4 {
		go func() {
			now := time.Unix(100, 0)
			for i := range 200 {
				id := fmt.Sprint(g, "-", i)
				if _, err := def.Route(context.Background(), Request{ID: id, Locals: prompts[(g+i)%len(prompts)]}, now); err != nil {
					errs <- err
					return
				}
				def.FreeLater(id, now.Add(time.Millisecond))
				select {
				case kick <- struct{}{}:
				default:
				}
			}
			errs <- nil
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	close(kick)
	<-done
	def.Settle()
	if st, ss := def.Stats(), def.SettleStats(); st.Active != 0 || st.Routed != 800 || ss.Unsettled != 0 {
		t.Fatalf("%+v %+v: want 800 routed, none active or pending", st, ss)
	}
}
