package replica_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/internal/eventplane/eventplanetest"
	"github.com/kvrouter/kvrouter/internal/eventplane/loadsync"
	"github.com/kvrouter/kvrouter/internal/replica"
	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/router"
)

func syncedRouter(t *testing.T, ls *replica.LoadSync, seed uint64) *router.Router {
	t.Helper()
	cfg := router.DefaultConfig()
	cfg.BlockSize = 4
	cfg.Affinity.Enabled = true
	r, err := router.New(cfg, router.Options{Rand: rand.New(rand.NewPCG(seed, 9)), Events: router.Events{OnBooking: ls.Publish}})
	if err != nil {
		t.Fatal(err)
	}
	for id := uint64(1); id <= 4; id++ {
		if err := r.AddWorker(router.WorkerInfo{ID: id, MaxNumBatchedTokens: 4096}); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

func remoteRequests(r *router.Router, origin string) int {
	n := 0
	for _, wl := range r.LoadBreakdown() {
		for _, p := range wl.Remote {
			if p.Origin == origin {
				n += p.Load.Requests
			}
		}
	}
	return n
}

// Two routers with load sync over the embedded NATS: a's bookings show in
// b's tracker (as a's part of the breakdown, in b's costs like its own),
// frees remove them, heartbeats keep them, and they go once a is silent
// for the timeout.
func TestLoadSyncOverNATS(t *testing.T) {
	conn := eventplanetest.Embedded(t)
	scfg := replica.SyncConfig{Heartbeat: 20 * time.Millisecond, Timeout: 500 * time.Millisecond, Logger: eventplanetest.Quiet}
	lsA, err := replica.NewLoadSync(conn.NC, scfg, "a")
	if err != nil {
		t.Fatal(err)
	}
	lsB, err := replica.NewLoadSync(conn.NC, scfg, "b")
	if err != nil {
		t.Fatal(err)
	}
	a, b := syncedRouter(t, lsA, 1), syncedRouter(t, lsB, 2)
	actx, stopA := context.WithCancel(context.Background())
	bctx, stopB := context.WithCancel(context.Background())
	doneA, doneB := make(chan error, 1), make(chan error, 1)
	go func() { doneA <- lsA.Run(actx, a) }()
	go func() { doneB <- lsB.Run(bctx, b) }()
	defer func() { stopB(); <-doneB }()
	eventplanetest.WaitFor(t, 10*time.Second, "b hears a", func() bool { return len(lsB.Peers()) == 1 })

	ctx := context.Background()
	toks := func(i int) []uint32 {
		out := make([]uint32, 32)
		for j := range out {
			out[j] = uint32(i*100 + j)
		}
		return out
	}
	for i := range 6 {
		if _, err := a.Route(ctx, router.Request{ID: fmt.Sprint("a", i), Tokens: toks(i), Session: "s"}, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.PrefillDone("a0", time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := a.Free("a1", time.Now()); err != nil {
		t.Fatal(err)
	}
	origin := lsA.Origin()
	sameLoads := func() bool {
		for id := uint64(1); id <= 4; id++ {
			if a.Load(kvevents.Worker{ID: id}) != b.Load(kvevents.Worker{ID: id}) {
				return false
			}
		}
		return remoteRequests(b, origin) == 5
	}
	eventplanetest.WaitFor(t, 10*time.Second, "a's bookings in b's tracker", sameLoads)
	if st := lsB.Stats(); st.Applied < 6+1+1 || st.Rejected != 0 {
		t.Errorf("b applied %+v", st)
	}
	if n := remoteRequests(a, lsB.Origin()); n != 0 {
		t.Errorf("a sees %d requests of b, which routed none (own messages ignored?)", n)
	}

	// The debug view lists a's part per worker.
	rec := httptest.NewRecorder()
	replica.LoadsHandler(b, lsB).ServeHTTP(rec, httptest.NewRequest("GET", "/debug/loads", nil))
	var view replica.LoadsView
	if err := json.Unmarshal(rec.Body.Bytes(), &view); err != nil {
		t.Fatal(err)
	}
	remote := 0
	for _, w := range view.Workers {
		for _, r := range w.Remote {
			if r.Origin == origin {
				remote += r.Requests
			}
		}
		if w.Local.Requests != 0 {
			t.Errorf("b has local load before routing: %+v", w)
		}
	}
	if !view.Sync || view.Origin != lsB.Origin() || len(view.Peers) != 1 || view.Peers[0].Origin != origin || remote != 5 {
		t.Errorf("debug view %s", rec.Body)
	}

	// b routes the session where a bound it (affinity travels).
	d, err := b.Route(ctx, router.Request{ID: "b0", Tokens: toks(9), Session: "s"}, time.Now())
	if err != nil || !d.Affinity {
		t.Fatalf("b's session request: %+v %v", d, err)
	}

	// Heartbeats keep a's bookings alive well past the timeout...
	hb := lsB.Stats().Heartbeats
	eventplanetest.WaitFor(t, 10*time.Second, "a timeout's worth of heartbeats", func() bool {
		return lsB.Stats().Heartbeats >= hb+uint64(2*scfg.Timeout/scfg.Heartbeat)
	})
	if n := remoteRequests(b, origin); n != 5 {
		t.Fatalf("b lost a's bookings while a was alive: %d", n)
	}
	// ...and once a is silent, b drops them (and keeps its own).
	stopA()
	<-doneA
	eventplanetest.WaitFor(t, 10*time.Second, "a's bookings dropped", func() bool { return remoteRequests(b, origin) == 0 })
	if st := lsB.Stats(); st.Expired != 1 || st.Dropped != 5 || len(lsB.Peers()) != 0 {
		t.Errorf("b stats %+v peers %v", st, lsB.Peers())
	}
	if st := b.Stats(); st.Active != 1 {
		t.Errorf("b's own request gone: %+v", st)
	}
}

// Bookings round-trip through the wire message.
func TestBookingMessage(t *testing.T) {
	for _, b := range []router.Booking{
		{Kind: router.BookRoute, ID: "r", Worker: kvevents.Worker{ID: 3, Rank: 1}, Locals: []uint64{7, 8}, ISL: 9, PrefillTokens: 5, OutputBlocks: 2},
		{Kind: router.BookPrefillDone, ID: "r", Worker: kvevents.Worker{ID: 3}},
		{Kind: router.BookFree, ID: "r"},
		{Kind: router.BookBind, Worker: kvevents.Worker{ID: 2}, Session: "s"},
	} {
		m := replica.MessageOf(b)
		got, ok := replica.BookingOf(&m)
		if !ok || fmt.Sprint(got) != fmt.Sprint(b) {
			t.Errorf("%+v -> %+v -> %+v", b, m, got)
		}
	}
	if _, ok := replica.BookingOf(&loadsync.Message{Kind: loadsync.KindHeartbeat}); ok {
		t.Error("a heartbeat is a booking")
	}
}
