package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/internal/discovery"
	"github.com/kvrouter/kvrouter/internal/eventplane"
	"github.com/kvrouter/kvrouter/internal/eventplane/eventplanetest"
	"github.com/kvrouter/kvrouter/internal/frontend"
	"github.com/kvrouter/kvrouter/internal/replica"
)

// waitUntil polls cond every 10ms until it holds or timeout passes.
func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, detail := cond()
		if ok {
			return
		}
		select {
		case <-deadline.C:
			t.Fatalf("timed out after %v waiting for %s: %s", timeout, what, detail)
		case <-tick.C:
		}
	}
}

// startReplica runs a serve runtime named id on natsURL with two static
// workers (never contacted: no proxying, no load polls) and waits for
// Ready.
func startReplica(t *testing.T, ctx context.Context, id, natsURL string, snapshotEvery time.Duration) *Serve {
	t.Helper()
	cfg := DefaultServeConfig()
	cfg.Listen = "127.0.0.1:0"
	cfg.NATS.URL = natsURL
	cfg.Frontend.LoadPollInterval = -1
	cfg.Frontend.Seed = uint64(len(id)) + uint64(id[0])
	cfg.StaticWorkers = []discovery.Worker{{ID: 1, URL: "http://127.0.0.1:1"}, {ID: 2, URL: "http://127.0.0.1:2"}}
	cfg.Replica.ID = id
	cfg.Replica.SnapshotInterval = snapshotEvery
	cfg.Replica.LeaseTTL, cfg.Replica.LeaseRenew = time.Second, 200*time.Millisecond
	cfg.Replica.StatusInterval = 100 * time.Millisecond
	cfg.Replica.Sync.Heartbeat, cfg.Replica.Sync.Timeout = 100*time.Millisecond, time.Second
	cfg.Logger = eventplanetest.Quiet
	return runServe(t, ctx, id, cfg)
}

// runServe builds a serve runtime from cfg, runs it until ctx is done or
// the test ends (an error it returns fails the test) and waits for Ready.
func runServe(t *testing.T, ctx context.Context, name string, cfg ServeConfig) *Serve {
	t.Helper()
	s, done := startServe(t, ctx, name, cfg)
	select {
	case <-s.Ready():
	case err := <-done:
		done <- err // for the cleanup
		t.Fatalf("%s stopped before ready: %v", name, err)
	case <-time.After(30 * time.Second):
		status := "no replica"
		if rep := s.Replica(); rep != nil {
			status = rep.Status().String()
		}
		t.Fatalf("%s not ready after 30s: %s", name, status)
	}
	return s
}

// startServe runs a serve runtime until the test ends (its error then
// fails the test); done yields Run's error if it returns early (put it
// back for the cleanup).
func startServe(t *testing.T, ctx context.Context, name string, cfg ServeConfig) (*Serve, chan error) {
	t.Helper()
	s, err := NewServe(cfg)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- s.Run(runCtx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("%s: %v", name, err)
		}
	})
	return s, done
}

func getBody(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func route(t *testing.T, s *Serve, tokens []uint32, track bool) frontend.RouteResponse {
	t.Helper()
	body, _ := json.Marshal(frontend.RouteRequest{Tokens: tokens, Track: track})
	resp, err := http.Post(s.URL()+"/route", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var rr frontend.RouteResponse
	if err := json.NewDecoder(resp.Body).Decode(&rr); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /route: %d %v", resp.StatusCode, err)
	}
	return rr
}

func candidate(rr frontend.RouteResponse, worker uint64) frontend.Candidate {
	for _, c := range rr.Candidates {
		if c.Worker == worker {
			return c
		}
	}
	return frontend.Candidate{}
}

// TestServeReplicas runs two serve runtimes on one NATS (DESIGN.md §9):
// both are ready only with the stream applied, report it on /readyz and
// hold the same index (equal dump_hash); a booking tracked on one shows in
// the other's /route breakdown (prefill term) and /debug/loads as a remote
// part, and leaves both when freed; one replica holds the writer lease and
// writes snapshots, and a third replica started later restores one and
// ends with the same dump hash.
func TestServeReplicas(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	quiet := eventplanetest.Quiet
	nats := eventplanetest.Embedded(t)
	pub := eventplane.NewPublisher(nats, eventplane.PublisherConfig{Model: DefaultModel, Logger: quiet})
	pubDone := make(chan error, 1)
	go func() { pubDone <- pub.Run(ctx) }()
	defer func() { cancel(); <-pubDone }()
	for w := uint64(1); w <= 2; w++ {
		if err := pub.Publish(ctx, stored(w, 1, 30)); err != nil {
			t.Fatal(err)
		}
	}
	if err := pub.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	a := startReplica(t, ctx, "replica-a", nats.ClientURL(), 100*time.Millisecond)
	b := startReplica(t, ctx, "replica-b", nats.ClientURL(), 100*time.Millisecond)
	for _, s := range []*Serve{a, b} {
		code, body := getBody(t, s.URL()+"/readyz")
		if code != http.StatusOK || !strings.Contains(body, "replica "+s.Replica().ID()+": ready: lag=0") {
			t.Errorf("/readyz: %d %q, want 200 with the replica's status", code, body)
		}
	}
	ha, hb := a.Frontend().IndexSummaries().DumpHash, b.Frontend().IndexSummaries().DumpHash
	if ha == "" || ha != hb {
		t.Fatalf("dump hashes %q and %q after catch-up, want equal", ha, hb)
	}

	// A tracked booking on a (a prompt no worker caches: 4 blocks of
	// prefill) is a remote load on b: its worker's prefill term is above
	// the other's.
	tokens := make([]uint32, 4*DefaultBlockSize)
	for i := range tokens {
		tokens[i] = uint32(7000 + i)
	}
	booked := route(t, a, tokens, true)
	other := uint64(3) - booked.Worker
	waitUntil(t, 10*time.Second, "the booking in b's breakdown", func() (bool, string) {
		rr := route(t, b, tokens, false)
		c, o := candidate(rr, booked.Worker), candidate(rr, other)
		// Each candidate's prefill term counts the request's own blocks too.
		return c.Prefill > o.Prefill, fmt.Sprintf("%+v", rr.Candidates)
	})
	code, body := getBody(t, b.URL()+"/debug/loads")
	var lv replica.LoadsView
	if err := json.Unmarshal([]byte(body), &lv); err != nil || code != http.StatusOK {
		t.Fatalf("/debug/loads: %d %v %s", code, err, body)
	}
	found := false
	for _, w := range lv.Workers {
		if w.Worker == booked.Worker && len(w.Remote) == 1 && w.Remote[0].PrefillTokens == len(tokens) && w.Local.Requests == 0 {
			found = true
		}
	}
	if !found || !lv.Sync || len(lv.Peers) == 0 {
		t.Errorf("b's /debug/loads lacks a's booking on worker %d as a remote part: %s", booked.Worker, body)
	}
	resp, err := http.Post(a.URL()+"/route/"+booked.RequestID+"/free", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	waitUntil(t, 10*time.Second, "the free in b's breakdown", func() (bool, string) {
		rr := route(t, b, tokens, false)
		return candidate(rr, booked.Worker).Prefill == candidate(rr, other).Prefill, fmt.Sprintf("%+v", rr.Candidates)
	})

	// One writer: exactly one replica holds the lease and snapshots.
	waitUntil(t, 20*time.Second, "a snapshot by the lease holder", func() (bool, string) {
		sa, sb := a.Replica().Status(), b.Replica().Status()
		return sa.LeaseHeld != sb.LeaseHeld && sa.Snapshots+sb.Snapshots > 0, sa.String() + " | " + sb.String()
	})
	// More events after the snapshot: a third replica restores it and
	// replays the rest. (Events of a worker neither static nor registered
	// would wait for its registration: new blocks of worker 2.)
	more := stored(12, 2, 5)
	more.WorkerID = 2
	if err := pub.Publish(ctx, more); err != nil {
		t.Fatal(err)
	}
	if err := pub.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	c := startReplica(t, ctx, "replica-c", nats.ClientURL(), 0)
	if st := c.Replica().Status(); st.Restored == 0 || st.RestoredEvents == 0 {
		t.Errorf("replica-c restored no snapshot: %s", st)
	}
	waitUntil(t, 10*time.Second, "equal dump hashes", func() (bool, string) {
		h := []string{a.Frontend().IndexSummaries().DumpHash, b.Frontend().IndexSummaries().DumpHash, c.Frontend().IndexSummaries().DumpHash}
		return h[0] == h[1] && h[1] == h[2] && h[0] != ha, strings.Join(h, " ")
	})
}
