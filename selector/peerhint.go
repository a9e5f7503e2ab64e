package selector

import (
	"time"

	"github.com/kvrouter/kvrouter/kvevents"
)

// Peer-KV hints: when another worker holds more of the prompt on its
// device than the chosen one, the chosen worker may fetch the difference
// from that peer over a KV link instead of computing it. ChoosePeerHint
// prices both with the worker's timing model and the link model (the
// same model as the disaggregated decode hop's pull); the router attaches
// the hint to the decision and the engine honours it.

// DefaultPeerMinBlocks is the least number of blocks a peer must hold
// beyond the chosen worker for a hint to be priced at all: below it the
// link's fixed cost dominates what a fetch could save.
const DefaultPeerMinBlocks = 4

// DefaultPeerLink is the mocker's default KV transfer link (25 GB/s,
// 1 ms per transfer) in the router's units.
func DefaultPeerLink() LinkCost {
	return TransferLink(bytesPerToken, 25e9, time.Millisecond)
}

// PeerHint says the chosen worker should fetch the leading Blocks prompt
// blocks from Peer, which holds them on its device. FetchMs is the
// modeled link time of the blocks it lacks; RecomputeMs the modeled
// prefill time of the same blocks on the chosen worker.
type PeerHint struct {
	Peer                 kvevents.Worker
	Blocks               int
	FetchMs, RecomputeMs float64
}

// SavedMs is the modeled time the fetch saves over recomputing.
func (h PeerHint) SavedMs() float64 { return h.RecomputeMs - h.FetchMs }

// ChoosePeerHint returns the hint for the chosen breakdown bs[chosen] of
// a request of isl tokens in blockSize-token blocks, and true when one
// pays: the peer (another worker, filtered out or not) holding the most
// device blocks holds at least minBlocks more than the chosen worker
// caches in any tier, and fetching those extra blocks over link costs
// less than computing them with tm (the marginal time of the prefill
// they add: tm's fixed cost per pass cancels). Ties go to the lower
// worker (bs is sorted by worker). Pure: reads bs only.
func ChoosePeerHint(bs []Breakdown, chosen, isl, blockSize, minBlocks int, tm Timing, link LinkCost) (PeerHint, bool) {
	if chosen < 0 || chosen >= len(bs) || blockSize <= 0 {
		return PeerHint{}, false
	}
	me := &bs[chosen]
	have := max(me.Overlap[kvevents.TierDevice], me.Overlap[kvevents.TierHostPinned], me.Overlap[kvevents.TierDisk], me.Overlap[kvevents.TierExternal])
	best := -1
	for i := range bs {
		if bs[i].Worker.ID == me.Worker.ID {
			continue
		}
		if best < 0 || bs[i].Overlap[kvevents.TierDevice] > bs[best].Overlap[kvevents.TierDevice] {
			best = i
		}
	}
	if best < 0 {
		return PeerHint{}, false
	}
	peer := bs[best].Overlap[kvevents.TierDevice]
	extra := peer - have
	if extra < max(1, minBlocks) {
		return PeerHint{}, false
	}
	tm = tm.orDefault()
	uncached := float64(max(0, isl-have*blockSize))
	fetched := float64(min(extra*blockSize, max(0, isl-have*blockSize)))
	h := PeerHint{
		Peer:        bs[best].Worker,
		Blocks:      peer,
		FetchMs:     link.Time(fetched),
		RecomputeMs: tm.prefillTime(uncached) - tm.prefillTime(uncached-fetched),
	}
	if uncached-fetched <= 0 {
		// Nothing left to compute: the pass still runs for the last token.
		h.RecomputeMs -= tm.PrefillConst
	}
	return h, h.FetchMs < h.RecomputeMs
}
