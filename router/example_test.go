package router_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/kvhash"
	"github.com/kvrouter/kvrouter/router"
)

// A gateway embeds the router: workers join, their KV events feed the
// index, and each request is routed to the worker with the best cost
// (cached prefix against load), then reported back as it progresses.
func Example() {
	cfg := router.DefaultConfig()
	cfg.BlockSize = 4
	r, err := router.New(cfg, router.Options{Rand: rand.New(rand.NewPCG(1, 2))})
	if err != nil {
		fmt.Println(err)
		return
	}
	for id := uint64(1); id <= 3; id++ {
		_ = r.AddWorker(router.WorkerInfo{ID: id, MaxNumBatchedTokens: 8192, TotalKVBlocks: 4096, BlockSize: 4})
	}
	prompt := make([]uint32, 64) // 16 blocks
	for i := range prompt {
		prompt[i] = uint32(i)
	}
	// Worker 2 cached the first 12 blocks of this prompt.
	ev := &kvevents.Event{WorkerID: 2, EventID: 1, Kind: kvevents.KindStored}
	for i, l := range kvhash.LocalHashes(prompt[:48], 4, kvhash.Seed("", "")) {
		ev.Blocks = append(ev.Blocks, kvevents.Block{Hash: uint64(1000 + i), Local: l})
	}
	if err := r.ApplyEvent(ev); err != nil {
		fmt.Println(err)
	}
	now := time.Unix(0, 0) // the router reads no clock: time comes in
	d, err := r.Route(context.Background(), router.Request{ID: "req-1", Tokens: prompt}, now)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("worker %d, %d of %d blocks cached\n", d.Worker.ID, d.Overlap[kvevents.TierDevice], d.Blocks)
	_ = r.PrefillDone("req-1", now.Add(20*time.Millisecond)) // first token
	_ = r.Free("req-1", now.Add(time.Second))                // done
	fmt.Println("active requests:", r.Stats().Active)
	// Output:
	// worker 2, 12 of 16 blocks cached
	// active requests: 0
}
