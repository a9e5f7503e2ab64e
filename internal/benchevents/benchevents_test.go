package benchevents_test

import (
	"context"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/internal/benchevents"
)

// A small run ingests every event end to end, batches them into fewer
// stream messages, records a lag per event and has a replica catch up.
func TestRunSmall(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const events, workers, bpe = 3000, 4, 4
	r, err := benchevents.Run(ctx, benchevents.Config{Events: events, Workers: workers, BlocksPerEvent: bpe, CatchUp: true})
	if err != nil {
		t.Fatal(err)
	}
	// The generator makes, per worker, 8 Stored events of bpe blocks then
	// one Removed of one hash.
	var want int64
	for i := 0; i < events; i++ {
		if (i/workers)%9 == 8 {
			want++
		} else {
			want += bpe
		}
	}
	if r.Events != events || r.Blocks != want {
		t.Fatalf("ingested %d events, %d blocks; want %d, %d", r.Events, r.Blocks, events, want)
	}
	if r.Messages == 0 || r.Messages > events {
		t.Fatalf("%d stream messages for %d events", r.Messages, events)
	}
	if r.LagMaxMs <= 0 || r.LagP50Ms > r.LagP99Ms || r.LagP99Ms > r.LagMaxMs || r.SubscriberP50Ms <= 0 {
		t.Fatalf("lag figures inconsistent: %+v", r)
	}
	if r.CatchUpBlocks <= 0 || r.CatchUpBlocks > want {
		t.Fatalf("catch-up applied %d blocks of %d", r.CatchUpBlocks, want)
	}
}
