package router

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"
)

// BenchmarkFreeOverhead is the router's cost of ending a request on a
// long prompt: Free = release the request's blocks in the load tracker +
// record its booking in the predicted side index (on by default), both
// under the router's lock. Setup as BenchmarkRouteOverhead (512 blocks at
// B=64, 8 or 64 workers, the clock advancing 20 µs per request, so each
// Free records the prompt at a new expiry); each request is routed, its
// first token reported (PrefillDone) and freed, and only Free is timed:
// p50-ns/p99-ns are its quantiles. ns/op and allocs/op cover the whole
// life (Route + PrefillDone + Free).
func BenchmarkFreeOverhead(b *testing.B) {
	const blocks, bs = 512, 64
	for _, w := range []int{8, 64} {
		b.Run(fmt.Sprintf("blocks=%d/workers=%d", blocks, w), func(b *testing.B) {
			r, toks := overheadRouter(b, w, blocks, bs)
			ids, lat, cands := overheadBuffers(b, w)
			ctx := context.Background()
			now := time.Unix(0, 0)
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				id := ids[i%len(ids)]
				now = now.Add(20 * time.Microsecond)
				if _, err := r.Route(ctx, Request{ID: id, Tokens: toks, Candidates: cands}, now); err != nil {
					b.Fatal(err)
				}
				if err := r.PrefillDone(id, now); err != nil {
					b.Fatal(err)
				}
				t0 := time.Now()
				if err := r.Free(id, now); err != nil {
					b.Fatal(err)
				}
				if d := time.Since(t0); len(lat) < cap(lat) {
					lat = append(lat, d)
				}
			}
			b.StopTimer()
			reportTail(b, lat, nil)
		})
	}
}
