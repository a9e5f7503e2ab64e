package sim

import (
	"context"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/trace"
)

// conversations builds a synthetic multi-turn trace: convs conversations of
// turns turns each; every prompt starts with a shared 2-block system prompt
// (ids 0 and 1), then its conversation's history, which grows by one or two
// trace blocks a turn. Turns of one conversation are gap apart; the
// conversations start staggered, so their turns interleave.
func conversations(convs, turns int, gap time.Duration, seed uint64) []trace.Record {
	rng := rand.New(rand.NewPCG(seed, 7))
	next := uint64(2)
	var recs []trace.Record
	for c := range convs {
		hist := []uint64{0, 1}
		start := time.Duration(c) * gap / time.Duration(convs)
		for t := range turns {
			for range 1 + rng.IntN(2) {
				hist = append(hist, next)
				next++
			}
			ids := append([]uint64(nil), hist...)
			recs = append(recs, trace.Record{
				Timestamp:    start + time.Duration(t)*gap,
				InputLength:  len(ids)*trace.TraceBlockTokens - rng.IntN(300),
				OutputLength: 5 + rng.IntN(60),
				HashIDs:      ids,
			})
		}
	}
	// Arrival order, stable on ties.
	for i := 1; i < len(recs); i++ {
		for j := i; j > 0 && recs[j].Timestamp < recs[j-1].Timestamp; j-- {
			recs[j], recs[j-1] = recs[j-1], recs[j]
		}
	}
	return recs
}

func smallConfig(recs []trace.Record, workers int) Config {
	cfg := DefaultConfig()
	cfg.Trace = recs
	cfg.Workers = workers
	cfg.Engine.NumBlocks = 1024
	return cfg
}

func clearWall(r *Report) {
	for i := range r.Policies {
		r.Policies[i].WallS = 0
	}
}

func TestDeterministic(t *testing.T) {
	recs := conversations(10, 5, 2*time.Second, 1)
	cfg := smallConfig(recs, 3)
	cfg.Engine.NumBlocks = 400 // small enough to evict and preempt
	cfg.KeepSamples = true
	run := func(parallel int) Report {
		c := cfg
		c.Parallel = parallel
		rep, err := Run(context.Background(), c, nil)
		if err != nil {
			t.Fatal(err)
		}
		clearWall(&rep)
		return rep
	}
	a, b, c := run(1), run(1), run(4)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("same config, different reports:\n%+v\n%+v", a, b)
	}
	if !reflect.DeepEqual(a, c) {
		t.Fatalf("parallel run differs from sequential run")
	}
	for _, p := range a.Policies {
		if p.Completed != len(recs) || p.Rejected != 0 {
			t.Errorf("%s: completed %d rejected %d of %d", p.Policy, p.Completed, p.Rejected, len(recs))
		}
	}
	// Another seed changes the seeded policies.
	cfg.Seed = 2
	d, err := Run(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if reflect.DeepEqual(a.Policy(PolicyRandom).Workers, d.Policy(PolicyRandom).Workers) {
		t.Errorf("random policy ignored the seed")
	}
}

// One conversation on two workers, turns far apart: the kv router follows
// the conversation to the worker that holds its history; round-robin
// alternates, so each turn finds only the history two turns back.
func TestKVBeatsRoundRobinOnHitRate(t *testing.T) {
	recs := conversations(1, 8, 5*time.Second, 3)
	cfg := smallConfig(recs, 2)
	cfg.Policies = []Policy{PolicyKV, PolicyRoundRobin}
	rep, err := Run(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	kv, rr := rep.Policy(PolicyKV), rep.Policy(PolicyRoundRobin)
	if kv.HitRate <= rr.HitRate {
		t.Fatalf("kv hit rate %.3f not above round-robin %.3f", kv.HitRate, rr.HitRate)
	}
	// kv reuses every previous turn: it reaches the infinite-cache bound.
	if kv.HitBlocks != rep.Bounds.InfiniteHits {
		t.Errorf("kv hit %d blocks, infinite cache %d", kv.HitBlocks, rep.Bounds.InfiniteHits)
	}
	if kv.Workers[0].Requests != len(recs) && kv.Workers[1].Requests != len(recs) {
		t.Errorf("kv split the conversation: %d/%d", kv.Workers[0].Requests, kv.Workers[1].Requests)
	}
	if rr.Workers[0].Requests != 4 || rr.Workers[1].Requests != 4 {
		t.Errorf("round-robin split %d/%d, want 4/4", rr.Workers[0].Requests, rr.Workers[1].Requests)
	}
}

// Hand-computed bounds, at B = 512 (one router block per trace id).
func TestBounds(t *testing.T) {
	recs := []trace.Record{
		{Timestamp: 0, InputLength: 1536, OutputLength: 1, HashIDs: []uint64{0, 1, 2}},
		{Timestamp: 1, InputLength: 1536, OutputLength: 1, HashIDs: []uint64{0, 1, 3}},
		{Timestamp: 2, InputLength: 1536, OutputLength: 1, HashIDs: []uint64{0, 1, 2}}, // fully cached: last block computed
		{Timestamp: 3, InputLength: 512, OutputLength: 1, HashIDs: []uint64{4}},
		{Timestamp: 4, InputLength: 1800, OutputLength: 1, HashIDs: []uint64{0, 1, 2, 5}}, // 3 full blocks
	}
	cfg := smallConfig(recs, 1)
	cfg.BlockSize = 512
	p := prepare(&cfg)
	// Infinite cache: 0 + 2 + min(3, 2) + 0 + 3 = 7 of 3+3+3+1+3 = 13.
	// LRU of 3 blocks (MRU first): r0 -> [0 1 2]; r1 hits 0,1 -> [0 1 3];
	// r2 hits 0,1 (2 was evicted) -> [0 1 2]; r3 misses -> [4 0 1];
	// r4 hits 0,1 -> 0 + 2 + 2 + 0 + 2 = 6.
	for _, tc := range []struct {
		capacity       int
		inf, pooled, n int64
	}{
		{3, 7, 6, 13},
		{4, 7, 7, 13}, // r3 evicts only 3: r4 finds 0,1,2
		{1, 7, 2, 13}, // only the root 0 survives each request: r1, r2 hit it; r3's 4 replaces it
		{0, 7, 0, 13},
	} {
		b := computeBounds(&p, 512, tc.capacity)
		if b.Blocks != tc.n || b.InfiniteHits != tc.inf || b.PooledHits != tc.pooled {
			t.Errorf("capacity %d: blocks %d inf %d pooled %d, want %d %d %d",
				tc.capacity, b.Blocks, b.InfiniteHits, b.PooledHits, tc.n, tc.inf, tc.pooled)
		}
	}
	// At B = 256 every trace block is two router blocks with equal local
	// hashes; the sequence hashes keep them apart: r1 hits 4 blocks, r2
	// min(6, 5), r4 6 of its 7 full blocks (1800/256 = 7; block 6 straddles
	// ids 2 and 5, new).
	cfg.BlockSize = 256
	p = prepare(&cfg)
	b := computeBounds(&p, 256, 1<<20)
	if b.Blocks != 6+6+6+2+7 || b.InfiniteHits != 4+5+0+6 || b.PooledHits != b.InfiniteHits {
		t.Errorf("B=256: %+v", b)
	}
}

func TestQueueAndBusyThresholdRun(t *testing.T) {
	recs := conversations(16, 4, 20*time.Millisecond, 5)
	cfg := smallConfig(recs, 2)
	cfg.Policies = []Policy{PolicyKV}
	cfg.Router.Queue.Threshold = 0.5
	cfg.Router.Selector.BusyKVUsage = 0.9
	cfg.MetricsDelay = 5 * time.Millisecond
	rep, err := Run(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := rep.Policies[0]
	if p.Completed+p.Rejected != len(recs) || p.Completed == 0 {
		t.Fatalf("completed %d rejected %d of %d", p.Completed, p.Rejected, len(recs))
	}
	if p.Queued == 0 {
		t.Errorf("nothing queued; the test does not exercise the queue")
	}
}

func TestFindCapacity(t *testing.T) {
	recs := conversations(20, 5, time.Second, 9)
	cfg := smallConfig(recs, 1)
	cfg.Policies = []Policy{PolicyRoundRobin}
	one, err := FindCapacity(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Workers = 4
	four, err := FindCapacity(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !(one.RequestsPerS > 0) || four.RequestsPerS < 2*one.RequestsPerS {
		t.Fatalf("capacity 1 worker %.3f req/s, 4 workers %.3f req/s", one.RequestsPerS, four.RequestsPerS)
	}
	if d := four.RateScale*four.TraceRate - four.RequestsPerS; d > 1e-9 || d < -1e-9 {
		t.Errorf("rate scale %v * trace rate %v != %v", four.RateScale, four.TraceRate, four.RequestsPerS)
	}
	again, err := CapacityFromScale(cfg, four.RateScale)
	if err != nil {
		t.Fatal(err)
	}
	if d := again.RequestsPerS - four.RequestsPerS; d > 1e-6 || d < -1e-6 || again.TraceRate != four.TraceRate {
		t.Errorf("CapacityFromScale = %+v, FindCapacity = %+v", again, four)
	}
}

func TestRunCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	cfg := smallConfig(conversations(2, 2, time.Second, 1), 1)
	if _, err := Run(ctx, cfg, nil); err == nil {
		t.Fatal("cancelled run succeeded")
	}
}

func TestValidate(t *testing.T) {
	cfg := DefaultConfig()
	if err := cfg.Validate(); err == nil {
		t.Error("empty trace accepted")
	}
	cfg.Trace = conversations(1, 1, time.Second, 1)
	cfg.Workers = 0
	cfg.RateScale = -1
	cfg.Policies = []Policy{"nope"}
	err := cfg.Validate()
	if err == nil {
		t.Fatal("bad config accepted")
	}
	if _, err := ParsePolicies("kv,bogus"); err == nil {
		t.Error("bogus policy parsed")
	}
	ps, err := ParsePolicies("kv, load,kv")
	if err != nil || !reflect.DeepEqual(ps, []Policy{PolicyKV, PolicyLoad}) {
		t.Errorf("ParsePolicies = %v, %v", ps, err)
	}
}

func TestEventQueueOrder(t *testing.T) {
	var q eventQueue
	rng := rand.New(rand.NewPCG(3, 4))
	type key struct {
		t time.Duration
		w int32
	}
	var pushed []key
	for i := range 500 {
		k := key{time.Duration(rng.IntN(20)), int32(i)}
		pushed = append(pushed, k)
		q.push(event{t: k.t, w: k.w})
	}
	var prev *event
	for q.len() > 0 {
		e := q.pop()
		if prev != nil && (e.t < prev.t || e.t == prev.t && e.w < prev.w) {
			t.Fatalf("popped (%v, %d) after (%v, %d)", e.t, e.w, prev.t, prev.w)
		}
		prev = &e
	}
}

// Without KV events (an event delay longer than the trace) the kv router
// is blind to the caches and loses the hits it gets with them.
func TestEventDelayMatters(t *testing.T) {
	recs := conversations(1, 8, 5*time.Second, 3)
	cfg := smallConfig(recs, 2)
	cfg.Policies = []Policy{PolicyKV}
	fast, err := Run(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.EventDelay = time.Hour
	blind, err := Run(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if blind.Policies[0].HitBlocks >= fast.Policies[0].HitBlocks {
		t.Fatalf("hits with events %d, without %d", fast.Policies[0].HitBlocks, blind.Policies[0].HitBlocks)
	}
}
