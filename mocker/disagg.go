package mocker

import (
	"slices"
	"time"
)

// Disaggregated prefill and decode (DESIGN.md §10), as vLLM's NIXL
// connector does it.
//
// Prefill side: a request with Hold set (vLLM's do_remote_decode) runs as
// usual (the caller asks for one output token), but when it finishes its
// blocks are not released: the engine holds them, referenced, until the
// decode worker has pulled them (Release) or Config.HoldTimeout passes
// (vLLM frees them after VLLM_NIXL_ABORT_REQUEST_TIMEOUT). Held blocks
// count as active (KV usage) and cannot be evicted.
//
// Decode side: a request with RemoteBlocks > 0 (do_remote_prefill) is
// admitted like any other, reuses its longest cached prefix, and pulls the
// rest of those leading blocks from the remote prefill worker over
// Config.KVTransfer, exactly as it onboards from a lower tier (onboard.go):
// fresh G1 blocks are allocated, the request waits (holding its slot)
// while others run, the pulls of one engine serialize on its link, and
// when the blocks land they are cached in G1 and announced with Stored:
// the transferred KV is now this worker's cache. The request then computes
// only the prompt past the pulled blocks (at least its last token, as vLLM
// recomputes it) and decodes. StepResult.Pulled names the requests whose
// pull landed, so a shell tells the prefill worker to Release them.
// Result.TransferredTokens counts the pulled prompt tokens (they are part
// of CachedTokens, but of no tier's TierCachedTokens).

// remoteLevel marks an onboardBlock pulled from a remote prefill worker
// rather than staged from a lower tier.
const remoteLevel = -1

// The default prefill-to-decode KV link of a disaggregated pair: 25 GB/s
// (a 200 Gb/s RDMA NIC, the common NIXL/UCX deployment) and 1 ms per
// transfer (the read request, its completion and the notification to the
// prefill worker). Public figures, not measured here. Constants, so no
// embedder can change another's default.
const (
	DefaultKVTransferBandwidth = 25e9
	DefaultKVTransferLatency   = time.Millisecond
)

// defaultKVTransfer is the Link of the two constants above.
func defaultKVTransfer() Link {
	return Link{Bandwidth: DefaultKVTransferBandwidth, Latency: DefaultKVTransferLatency}
}

// DefaultHoldTimeout is how long a prefill engine keeps a finished
// request's blocks for a decode worker that never pulls them: vLLM's
// VLLM_NIXL_ABORT_REQUEST_TIMEOUT default (480 s).
const DefaultHoldTimeout = 480 * time.Second

// held is a finished request whose blocks wait for a remote pull.
type held struct {
	s     *seq
	until time.Duration
}

// remoteBlocks appends to s.onboard the blocks [j, min(maxHit,
// s.req.RemoteBlocks)) to pull from the remote prefill worker.
func (e *Engine) remoteBlocks(s *seq, j, maxHit int) {
	for ; j < min(maxHit, s.req.RemoteBlocks); j++ {
		s.onboard = append(s.onboard, onboardBlock{hash: s.hashes[j], li: remoteLevel})
	}
}

// startPull books the remote pull of n blocks on the engine's KV link and
// returns when it lands.
func (e *Engine) startPull(n int) time.Duration {
	if n == 0 {
		return e.passStart
	}
	start := max(e.passStart, e.pullFree)
	e.pullFree = start + e.scale(e.cfg.KVTransfer.Transfer(n, e.kvBlockBytes()))
	e.stats.TransferredBlocks += uint64(n)
	return e.pullFree
}

// kvBlockBytes is the size of one block of KV (Tiers.BlockBytes, or
// DefaultBytesPerToken * BlockSize).
func (e *Engine) kvBlockBytes() int64 {
	if e.cfg.Tiers.BlockBytes > 0 {
		return e.cfg.Tiers.BlockBytes
	}
	return int64(DefaultBytesPerToken) * int64(e.cfg.BlockSize)
}

// hold keeps finished request s's blocks for a remote pull until now +
// HoldTimeout.
func (e *Engine) hold(s *seq, now time.Duration) {
	e.held = append(e.held, held{s: s, until: now + e.cfg.HoldTimeout})
}

// Release frees the blocks a finished Hold request kept for its decode
// worker (the pull completed, or the decode hop gave up). False when id
// is not held (never held, released, or timed out).
func (e *Engine) Release(id uint64) bool {
	for i := range e.held {
		if e.held[i].s.req.ID == id {
			s := e.held[i].s
			e.held = slices.Delete(e.held, i, i+1)
			e.freeBlocks(s)
			e.maybeCheck()
			return true
		}
	}
	return false
}

// ExpireHolds frees, in finish order, the holds whose timeout passed by
// now, and returns their ids. Step calls it at every pass; an idle shell
// calls it itself.
func (e *Engine) ExpireHolds(now time.Duration) []uint64 {
	var out []uint64
	kept := e.held[:0]
	for _, h := range e.held {
		if h.until <= now {
			e.freeBlocks(h.s)
			out = append(out, h.s.req.ID)
			e.stats.HoldsExpired++
			continue
		}
		kept = append(kept, h)
	}
	clear(e.held[len(kept):])
	e.held = kept
	return out
}

// Held is the number of finished requests whose blocks are held.
func (e *Engine) Held() int { return len(e.held) }

// NextHoldExpiry is the earliest hold timeout (false when nothing is
// held), for a discrete-event driver.
func (e *Engine) NextHoldExpiry() (time.Duration, bool) {
	if len(e.held) == 0 {
		return 0, false
	}
	t := e.held[0].until
	for _, h := range e.held[1:] {
		t = min(t, h.until)
	}
	return t, true
}

// HeldBlocks returns the physical block ids a finished Hold request keeps
// (vLLM's remote_block_ids), nil when id is not held.
func (e *Engine) HeldBlocks(id uint64) []int {
	for _, h := range e.held {
		if h.s.req.ID == id {
			out := make([]int, len(h.s.blocks))
			for i, b := range h.s.blocks {
				out[i] = int(b)
			}
			return out
		}
	}
	return nil
}
