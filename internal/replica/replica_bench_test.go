package replica_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/indexer"
	"github.com/kvrouter/kvrouter/internal/eventplane"
	"github.com/kvrouter/kvrouter/internal/eventplane/eventplanetest"
	"github.com/kvrouter/kvrouter/internal/replica"
	"github.com/kvrouter/kvrouter/internal/snapshot"
	"github.com/kvrouter/kvrouter/kvevents"
)

// BenchmarkColdStart measures a replica's cold start: from New to ready,
// restoring a snapshot of `blocks` blocks and replaying `replay` stream
// events (4 blocks each) after it, into flash behind the sticky writers
// (as serve runs it). The embedded NATS runs in-process, so its CPU
// counts too.
//
//	go test -run '^$' -bench ColdStart -benchtime 3x ./internal/replica/
func BenchmarkColdStart(b *testing.B) {
	for _, sz := range []struct{ blocks, replay int }{{100_000, 10_000}, {1_000_000, 100_000}} {
		b.Run(fmt.Sprintf("blocks=%d/replay=%d", sz.blocks, sz.replay), func(b *testing.B) {
			benchColdStart(b, sz.blocks, sz.replay)
		})
	}
}

func benchColdStart(b *testing.B, blocks, replay int) {
	conn := eventplanetest.Embedded(b)
	ctx := context.Background()
	const workers, perEvent = 16, 64
	gen := eventplanetest.NewTrees(rand.New(rand.NewPCG(1, 2)))
	next := gen.Next
	// The snapshot: the index dump of `blocks` blocks, covering no stream
	// message yet, with the per-worker event ids the stream continues.
	snap := &snapshot.Snapshot{Position: eventplane.Position{LastIDs: map[kvevents.Worker]uint64{}}, Created: time.Now()}
	ref := indexer.NewFlash(indexer.FlashConfig{}) // what the replica must end with
	for i := 0; i < blocks/perEvent; i++ {
		ev := next(kvevents.Worker{ID: uint64(1 + i%workers)}, perEvent)
		_ = ref.Apply(&ev)
		snap.Events = append(snap.Events, ev)
	}
	for w, id := range gen.Last {
		snap.Position.LastIDs[w] = id
	}
	mgr := snapshot.NewManager(conn, snapshot.Config{Logger: eventplanetest.Quiet})
	if err := mgr.Save(ctx, snap); err != nil {
		b.Fatal(err)
	}
	pub := eventplane.NewPublisher(conn, eventplane.PublisherConfig{Logger: eventplanetest.Quiet})
	pctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = pub.Run(pctx) }()
	for i := range replay {
		ev := next(kvevents.Worker{ID: uint64(1 + i%workers)}, 4)
		_ = ref.Apply(&ev)
		if err := pub.Publish(ctx, ev); err != nil {
			b.Fatal(err)
		}
	}
	if err := pub.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	stop()
	wg.Wait()
	want := ref.Stats().Blocks
	total := blocks/perEvent*perEvent + replay*4

	b.ResetTimer()
	for range b.N {
		idx := indexer.NewConcurrent(indexer.NewFlash(indexer.FlashConfig{}), indexer.ConcurrentConfig{Writers: runtime.GOMAXPROCS(0)})
		cfg := replica.DefaultConfig()
		cfg.SnapshotInterval, cfg.Logger = 0, eventplanetest.Quiet
		rep, err := replica.New(conn, cfg, replica.Options{Sink: idx, Clear: func() {}})
		if err != nil {
			b.Fatal(err)
		}
		rctx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); _ = idx.Run(rctx) }()
		go func() { defer wg.Done(); _ = rep.Run(rctx) }()
		select {
		case <-rep.Ready():
		case <-time.After(5 * time.Minute):
			b.Fatalf("not ready: %s", rep.Status())
		}
		b.StopTimer()
		if got := idx.Stats().Blocks; got != want {
			b.Fatalf("index holds %d blocks, want %d", got, want)
		}
		cancel()
		wg.Wait()
		b.StartTimer()
	}
	b.ReportMetric(float64(total)*float64(b.N)/b.Elapsed().Seconds(), "blocks/s")
}
