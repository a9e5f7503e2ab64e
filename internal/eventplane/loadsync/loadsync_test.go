package loadsync_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/internal/eventplane/eventplanetest"
	"github.com/kvrouter/kvrouter/internal/eventplane/loadsync"
)

type got struct {
	mu   sync.Mutex
	msgs []loadsync.Message
}

func (g *got) ApplyRemote(origin string, m *loadsync.Message) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.msgs = append(g.msgs, *m)
}

func (g *got) n() int { g.mu.Lock(); defer g.mu.Unlock(); return len(g.msgs) }

func TestSyncBetweenReplicas(t *testing.T) {
	conn := eventplanetest.Embedded(t)
	var ga, gb got
	a := loadsync.New(conn.NC, loadsync.Config{Origin: "a", MaxBatch: 4}, &ga)
	b := loadsync.New(conn.NC, loadsync.Config{Origin: "b"}, &gb)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, s := range []*loadsync.Sync{a, b} {
		wg.Add(1)
		go func() { defer wg.Done(); _ = s.Run(ctx) }()
	}
	defer wg.Wait()
	defer cancel()
	// Subscriptions are set up inside Run: publish until b hears a.
	eventplanetest.WaitFor(t, 10*time.Second, "b hears a", func() bool {
		a.Publish(loadsync.Message{Kind: loadsync.KindRoute, Request: "r1", Worker: 3, Locals: []uint64{1, 2}, ISL: 128, PrefillTokens: 64})
		return gb.n() > 0
	})
	before := gb.n()
	for i := 0; i < 10; i++ {
		a.Publish(loadsync.Message{Kind: loadsync.KindFree, Request: "r1", Worker: 3})
	}
	b.Publish(loadsync.Message{Kind: loadsync.KindAffinity, Session: "s", Worker: 5, TTL: time.Minute})
	eventplanetest.WaitFor(t, 10*time.Second, "all delivered", func() bool { return gb.n() >= before+10 && ga.n() >= 1 })
	ga.mu.Lock()
	defer ga.mu.Unlock()
	for _, m := range ga.msgs {
		if m.Kind != loadsync.KindAffinity || m.Session != "s" || m.Worker != 5 {
			t.Fatalf("a received %+v (its own, or mangled)", m)
		}
	}
	if st := a.Stats(); st.Batches < 3 { // 10 frees in batches of at most 4
		t.Fatalf("a stats %+v", st)
	}
}
