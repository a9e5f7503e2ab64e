package mockerd

import (
	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/kvhash"
	"github.com/kvrouter/kvrouter/mocker"
)

// blockTokens maps the engine hash of every full block of the live
// requests (prompt and generated tokens) to the block's tokens, so a
// Stored event can be published vLLM-style with its token_ids. Only the
// engine loop uses it. Engine hashes are the kvhash sequence chain (see
// the mocker package doc), so they are recomputed here from the tokens.
type blockTokens struct {
	bs   int
	seed uint64
	m    map[uint64]*blockRef
}

type blockRef struct {
	toks []uint32
	refs int
}

// reqBlocks is one live request's token history, owned by the loop.
type reqBlocks struct {
	toks   []uint32
	hashes []uint64 // sequence hashes of its full blocks, registered in m
}

func newBlockTokens(bs int, seed uint64) *blockTokens {
	if seed == 0 {
		seed = kvhash.DefaultSeed
	}
	return &blockTokens{bs: bs, seed: seed, m: make(map[uint64]*blockRef)}
}

func (b *blockTokens) ref(h uint64, toks []uint32) {
	if r := b.m[h]; r != nil {
		r.refs++
		return
	}
	b.m[h] = &blockRef{toks: toks, refs: 1}
}

// add registers a new request's prompt blocks.
func (b *blockTokens) add(prompt []uint32) *reqBlocks {
	rb := &reqBlocks{toks: append([]uint32(nil), prompt...)}
	b.extend(rb)
	return rb
}

// extend registers the request's blocks completed since the last call.
func (b *blockTokens) extend(rb *reqBlocks) {
	for n := len(rb.hashes); (n+1)*b.bs <= len(rb.toks); n++ {
		blk := rb.toks[n*b.bs : (n+1)*b.bs : (n+1)*b.bs]
		local := kvhash.Local(blk, b.seed)
		h := local
		if n > 0 {
			h = kvhash.SeqNext(rb.hashes[n-1], local)
		}
		rb.hashes = append(rb.hashes, h)
		b.ref(h, blk)
	}
}

// output records a generated token.
func (b *blockTokens) output(rb *reqBlocks, o *mocker.Output) {
	rb.toks = append(rb.toks, o.Token)
	b.extend(rb)
}

// drop releases a finished request's blocks.
func (b *blockTokens) drop(rb *reqBlocks) {
	for _, h := range rb.hashes {
		if r := b.m[h]; r != nil {
			if r.refs--; r.refs <= 0 {
				delete(b.m, h)
			}
		}
	}
	rb.hashes = nil
}

// tokens returns the tokens of each block of a Stored event (nil entries
// for blocks it does not know).
func (b *blockTokens) tokens(ev *kvevents.Event) [][]uint32 {
	out := make([][]uint32, len(ev.Blocks))
	for i, blk := range ev.Blocks {
		if r := b.m[blk.Hash]; r != nil {
			out[i] = r.toks
		}
	}
	return out
}
