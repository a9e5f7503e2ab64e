package router

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/kvhash"
	"github.com/kvrouter/kvrouter/selector"
)

// peerScenario binds session s to a worker with a short request, has the
// other worker store a 40-block prompt, and routes that prompt in session
// s: affinity keeps it on the worker that holds none of it.
func peerScenario(t *testing.T, enable []string) Decision {
	t.Helper()
	return peerScenarioWith(t, enable, nil)
}

// peerScenarioWith is peerScenario with mod applied to the config.
func peerScenarioWith(t *testing.T, enable []string, mod func(*Config)) Decision {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Policy = PolicyKV
	cfg.BlockSize = 16
	cfg.Affinity.Enabled = true
	cfg.EnableFeature = enable
	if mod != nil {
		mod(&cfg)
	}
	r, err := New(cfg, Options{Rand: rand.New(rand.NewPCG(1, 2))})
	if err != nil {
		t.Fatal(err)
	}
	for id := uint64(1); id <= 2; id++ {
		if err := r.AddWorker(WorkerInfo{ID: id, MaxNumBatchedTokens: 8192, TotalKVBlocks: 10000, BlockSize: 16}); err != nil {
			t.Fatal(err)
		}
	}
	t0 := time.Unix(1_700_000_000, 0)
	x, err := r.Route(context.Background(), Request{ID: "x", Session: "s", ISL: 8}, t0)
	if err != nil {
		t.Fatal(err)
	}
	other := kvevents.Worker{ID: 3 - x.Worker.ID}
	toks := make([]uint32, 40*16)
	for i := range toks {
		toks[i] = uint32(i + 7)
	}
	if err := r.ApplyEvent(storedEvent(r, other, kvevents.TierDevice, toks, "", "", 1)); err != nil {
		t.Fatal(err)
	}
	locals := kvhash.LocalHashes(toks, 16, kvhash.Seed("", ""))
	d, err := r.Route(context.Background(), Request{ID: "y", Session: "s", Locals: locals, ISL: len(toks) + 5}, t0.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if d.Worker != x.Worker || !d.Affinity {
		t.Fatalf("y on %v (affinity %v), want %v", d.Worker, d.Affinity, x.Worker)
	}
	return d
}

// TestPeerKVHintDecision: with the feature, the decision names the peer
// holding the prompt and counts its blocks as cached (the prefill load
// booked); without it the decision is as before: no hint, all computed.
func TestPeerKVHintDecision(t *testing.T) {
	off := peerScenario(t, nil)
	if off.PeerHint != nil || off.PrefillTokens != 40*16+5 {
		t.Fatalf("feature off: hint %+v prefill %d, want none and %d", off.PeerHint, off.PrefillTokens, 40*16+5)
	}
	on := peerScenario(t, []string{FeaturePeerKVHints})
	h := on.PeerHint
	if h == nil {
		t.Fatal("feature on: no hint")
	}
	if h.Peer.ID == on.Worker.ID || h.Blocks != 40 || !(h.FetchMs < h.RecomputeMs) {
		t.Fatalf("hint %+v on worker %v", *h, on.Worker)
	}
	if on.PrefillTokens != 5 || on.CachedTokens != 40*16 {
		t.Fatalf("prefill %d cached %d, want 5 and %d", on.PrefillTokens, on.CachedTokens, 40*16)
	}
}

// TestPeerHintConfig: Config.PeerHints prices the hint: a lead above the
// peer's 40 blocks, or a link slower than computing, sends none; the
// defaults and a lead of exactly 40 do.
func TestPeerHintConfig(t *testing.T) {
	on := []string{FeaturePeerKVHints}
	for _, c := range []struct {
		name string
		ph   PeerHintConfig
		hint bool
	}{
		{"defaults", DefaultPeerHintConfig(), true},
		{"lead 40", PeerHintConfig{MinBlocks: 40, Link: DefaultPeerHintConfig().Link}, true},
		{"lead 41", PeerHintConfig{MinBlocks: 41, Link: DefaultPeerHintConfig().Link}, false},
		{"slow link", PeerHintConfig{MinBlocks: 4, Link: selector.LinkCost{MsPerToken: 1, MsPerBatch: 1}}, false},
	} {
		d := peerScenarioWith(t, on, func(cfg *Config) { cfg.PeerHints = c.ph })
		if (d.PeerHint != nil) != c.hint {
			t.Errorf("%s: hint %+v, want one: %v", c.name, d.PeerHint, c.hint)
		}
	}
	bad := DefaultConfig()
	bad.PeerHints = PeerHintConfig{MinBlocks: -1, Link: selector.LinkCost{MsPerToken: math.NaN()}}
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "peer hints min blocks -1") || !strings.Contains(err.Error(), "peer hints link NaN") {
		t.Fatalf("Validate: %v", err)
	}
}
