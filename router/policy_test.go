package router

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

func TestParsePolicy(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Policy
		err  bool
	}{
		{"kv", PolicyKV, false},
		{"approx", PolicyApprox, false},
		{"kv-approx", 0, true}, // the former spelling: an error naming approx
		{"load", PolicyLoad, false},
		{"round-robin", PolicyRoundRobin, false},
		{"random", PolicyRandom, false},
		{" kv ", PolicyKV, false},
		{"", 0, true},
		{"rr", 0, true},
		{"cache-aware", 0, true}, // a simulator baseline, not a router policy
	} {
		got, err := ParsePolicy(tc.in)
		if (err != nil) != tc.err || (!tc.err && got != tc.want) {
			t.Errorf("ParsePolicy(%q) = %v, %v", tc.in, got, err)
		}
	}
	for _, name := range PolicyNames() {
		p, err := ParsePolicy(name)
		if err != nil || p.String() != name {
			t.Errorf("%q: parsed %v (%v), prints %q", name, p, err, p.String())
		}
		b, err := p.MarshalText()
		var q Policy
		if err != nil || q.UnmarshalText(b) != nil || q != p {
			t.Errorf("%v: text round trip gave %v (%v)", p, q, err)
		}
	}
	if _, err := Policy(99).MarshalText(); err == nil {
		t.Error("policy 99 marshalled")
	}
	if err := (Config{Policy: Policy(99), BlockSize: 4}).Validate(); err == nil {
		t.Error("policy 99 validated")
	}
}

// picks routes n one-block requests (freed at once) and returns the
// chosen worker ids.
func picks(t *testing.T, p Policy, seed uint64, workers, n int) []uint64 {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Policy, cfg.BlockSize = p, 4
	r, err := New(cfg, Options{Rand: rand.New(rand.NewPCG(seed, 0))})
	if err != nil {
		t.Fatal(err)
	}
	for id := 1; id <= workers; id++ {
		if err := r.AddWorker(WorkerInfo{ID: uint64(id)}); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Unix(0, 0)
	out := make([]uint64, n)
	for i := range out {
		id := fmt.Sprint(i)
		d, err := r.Route(context.Background(), Request{ID: id, Tokens: []uint32{1, 2, 3, 4}}, now)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = d.Worker.ID
		if err := r.Free(id, now); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func TestRoundRobinCycles(t *testing.T) {
	got := picks(t, PolicyRoundRobin, 1, 3, 7)
	if want := []uint64{1, 2, 3, 1, 2, 3, 1}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("round-robin picks %v, want %v", got, want)
	}
	// Blind to the seed.
	if other := picks(t, PolicyRoundRobin, 99, 3, 7); fmt.Sprint(other) != fmt.Sprint(got) {
		t.Fatalf("round-robin depends on the seed: %v vs %v", other, got)
	}
}

func TestRandomIsSeededAndUniform(t *testing.T) {
	const n, workers = 3000, 3
	a, b := picks(t, PolicyRandom, 5, workers, n), picks(t, PolicyRandom, 5, workers, n)
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Fatal("random: the same seed gave different picks")
	}
	if c := picks(t, PolicyRandom, 6, workers, n); fmt.Sprint(a) == fmt.Sprint(c) {
		t.Fatal("random: different seeds gave the same picks")
	}
	// The picks must be exactly what the injected source draws: one
	// IntN(eligible) per decision (idle workers tie on cost; a cost-based
	// pick would draw too, but also favour the unloaded ones).
	rng := rand.New(rand.NewPCG(5, 0))
	count := map[uint64]int{}
	for i, w := range a {
		if want := uint64(rng.IntN(workers) + 1); w != want {
			t.Fatalf("pick %d = w%d, the source says w%d", i, w, want)
		}
		count[w]++
	}
	for id := uint64(1); id <= workers; id++ {
		if c := count[id]; c < n/workers*8/10 || c > n/workers*12/10 {
			t.Errorf("w%d got %d of %d picks: %v", id, c, n, count)
		}
	}
}
