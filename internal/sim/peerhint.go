package sim

import "github.com/kvrouter/kvrouter/router"

// Peer-KV hints (router.FeaturePeerKVHints): a decision's hint names a
// peer holding more of the prompt; the simulated engine honours it as
// the aggregated engine of a disaggregated pair does its remote prefill
// (mocker Request.RemoteBlocks): it pulls the leading blocks it lacks over
// its KV link (Config.Engine.KVTransfer, the link the router prices),
// announces them with Stored, and computes only the rest. The peer keeps
// its copy; the pull does not hold it (a peer's blocks could be evicted
// meanwhile, a live fetch would then fail back to computing: not
// modeled).

// peerHinter is a policy whose decisions may carry peer-KV hints.
type peerHinter interface {
	// takePeerBlocks returns and forgets request i's hinted blocks (0:
	// none).
	takePeerBlocks(i int) int
}

// notePeerHint keeps d's hint for request i until its dispatch.
func (rp *routerPolicy) notePeerHint(i int, d *router.Decision) {
	if d.PeerHint == nil || d.Queued {
		return
	}
	if rp.peer == nil {
		rp.peer = map[int]int{}
	}
	rp.peer[i] = d.PeerHint.Blocks
}

func (rp *routerPolicy) takePeerBlocks(i int) int {
	n, ok := rp.peer[i]
	if ok {
		delete(rp.peer, i)
	}
	return n
}

// peerBlocks is request i's hinted blocks for its dispatch, counted in
// the report.
func (f *fleet) peerBlocks(i int) int {
	ph, ok := f.pol.(peerHinter)
	if !ok {
		return 0
	}
	n := ph.takePeerBlocks(i)
	if n > 0 {
		f.rep.PeerHints++
	}
	return n
}
