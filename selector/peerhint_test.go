package selector

import (
	"math"
	"testing"

	"github.com/kvrouter/kvrouter/kvevents"
)

func peerBreakdowns(dev ...int) []Breakdown {
	bs := make([]Breakdown, len(dev))
	for i, d := range dev {
		bs[i] = Breakdown{Worker: kvevents.Worker{ID: uint64(i)}, Overlap: [kvevents.NumTiers]int{d, 0, 0, 0}}
	}
	return bs
}

func TestPeerHintPricesFetchAgainstRecompute(t *testing.T) {
	tm := DefaultTiming()
	link := DefaultPeerLink()
	// Worker 0 chosen with 2 blocks; worker 2 holds 40 of the 50.
	bs := peerBreakdowns(2, 10, 40)
	h, ok := ChoosePeerHint(bs, 0, 50*64, 64, DefaultPeerMinBlocks, tm, link)
	if !ok {
		t.Fatalf("no hint: %+v", h)
	}
	if h.Peer.ID != 2 || h.Blocks != 40 {
		t.Fatalf("hint %+v, want peer 2 with 40 blocks", h)
	}
	tok := 38 * 64.0
	wantFetch := 1 + tok*link.MsPerToken
	u := 48 * 64.0
	wantRe := tm.PrefillTime(u) - tm.PrefillTime(u-tok)
	if math.Abs(h.FetchMs-wantFetch) > 1e-9 || math.Abs(h.RecomputeMs-wantRe) > 1e-9 {
		t.Fatalf("fetch %v recompute %v, want %v %v", h.FetchMs, h.RecomputeMs, wantFetch, wantRe)
	}
	if h.SavedMs() <= 0 {
		t.Fatalf("saved %v", h.SavedMs())
	}
}

func TestPeerHintThresholdAndSlowLink(t *testing.T) {
	tm := DefaultTiming()
	// Peer holds only 3 more blocks than the chosen worker: below 4.
	if h, ok := ChoosePeerHint(peerBreakdowns(5, 8), 0, 20*64, 64, 4, tm, DefaultPeerLink()); ok {
		t.Fatalf("hint under the threshold: %+v", h)
	}
	// Exactly 4 more: priced and taken on the default link.
	if _, ok := ChoosePeerHint(peerBreakdowns(5, 9), 0, 20*64, 64, 4, tm, DefaultPeerLink()); !ok {
		t.Fatal("no hint at the threshold")
	}
	// A link slower than computing: recompute wins, no hint.
	slow := LinkCost{MsPerToken: 1, MsPerBatch: 1}
	if h, ok := ChoosePeerHint(peerBreakdowns(0, 30), 0, 30*64, 64, 4, tm, slow); ok {
		t.Fatalf("hint over a slow link: %+v", h)
	}
	// The chosen worker caching more in a lower tier than the peer holds.
	bs := peerBreakdowns(0, 10)
	bs[0].Overlap[kvevents.TierHostPinned] = 12
	if h, ok := ChoosePeerHint(bs, 0, 20*64, 64, 1, tm, DefaultPeerLink()); ok {
		t.Fatalf("hint though the chosen worker holds more: %+v", h)
	}
	// Another rank of the chosen worker is no peer.
	bs = peerBreakdowns(0, 30)
	bs[1].Worker = kvevents.Worker{ID: 0, Rank: 1}
	if h, ok := ChoosePeerHint(bs, 0, 30*64, 64, 1, tm, DefaultPeerLink()); ok {
		t.Fatalf("hint naming the chosen worker: %+v", h)
	}
}
