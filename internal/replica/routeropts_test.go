package replica_test

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/indexer"
	"github.com/kvrouter/kvrouter/internal/eventplane/eventplanetest"
	"github.com/kvrouter/kvrouter/internal/replica"
	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/router"
)

// A router whose tier indexes sit behind sticky writers (as serve builds
// it): snapshots carry every tier, a second router restores them into the
// right tier, and Clear empties them all.
func TestRouterOptions(t *testing.T) {
	conn := eventplanetest.Embedded(t)
	pub := startPublisher(t, conn)
	newRouter := func() (*router.Router, []*indexer.Concurrent) {
		var conc []*indexer.Concurrent
		rt, err := router.New(router.DefaultConfig(), router.Options{Rand: rand.New(rand.NewPCG(1, 1)),
			NewIndex: func(kvevents.Tier) indexer.Index {
				c := indexer.NewConcurrent(indexer.NewFlash(indexer.FlashConfig{}), indexer.ConcurrentConfig{Writers: 2})
				conc = append(conc, c)
				return c
			}})
		if err != nil {
			t.Fatal(err)
		}
		return rt, conc
	}
	run := func(rt *router.Router, conc []*indexer.Concurrent, cfg replica.Config) *replica.Replica {
		rep, err := replica.New(conn, cfg, replica.RouterOptions(rt))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for _, c := range conc {
			wg.Add(1)
			go func() { defer wg.Done(); _ = c.Run(ctx) }()
		}
		wg.Add(1)
		go func() { defer wg.Done(); _ = rep.Run(ctx) }()
		t.Cleanup(func() { cancel(); wg.Wait() })
		return rep
	}
	// Events on two tiers, one reference index per tier.
	refs := [kvevents.NumTiers]indexer.Index{}
	for i := range refs {
		refs[i] = indexer.NewRadix(indexer.RadixConfig{})
	}
	g := eventplanetest.NewGen(9, 3, 1)
	ctx := context.Background()
	for i := range 300 {
		ev := g.Next()
		if i%3 == 0 {
			ev.Tier = kvevents.TierHostPinned
		}
		_ = refs[ev.Tier].Apply(&ev)
		if err := pub.Publish(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := pub.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	last := streamInfo(t, conn).State.LastSeq

	ra, ca := newRouter()
	a := run(ra, ca, fastConfig("a"))
	eventplanetest.WaitFor(t, 30*time.Second, "a's snapshot", func() bool { return latestSeq(t, a) == last })
	s, err := a.Snapshots().Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	host := 0
	for _, ev := range s.Events {
		if ev.Tier == kvevents.TierHostPinned {
			host++
		}
	}
	if host == 0 {
		t.Fatal("the snapshot has no host-tier events")
	}

	rb, cb := newRouter()
	bcfg := fastConfig("b")
	bcfg.SnapshotInterval = 0
	b := run(rb, cb, bcfg)
	eventplanetest.WaitFor(t, 30*time.Second, "b ready", func() bool { return b.Status().Ready })
	if b.Status().Restored != last {
		t.Fatalf("b did not restore a's snapshot: %s", b.Status())
	}
	for tier, ref := range refs {
		if got, want := eventplanetest.DumpHash(rb.Index(kvevents.Tier(tier)).Dump()), eventplanetest.DumpHash(ref.Dump()); got != want {
			t.Errorf("tier %s: b %x, want %x", kvevents.Tier(tier), got, want)
		}
	}
	replica.RouterOptions(rb).Clear()
	for tier := range refs {
		if n := len(rb.Index(kvevents.Tier(tier)).Dump()); n != 0 {
			t.Errorf("tier %s holds %d events after Clear", kvevents.Tier(tier), n)
		}
	}
}
