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
//
// With lower tiers a block is stored again (on the host, on disk) after
// the request that computed it finished: the map also holds a reference
// per device, host and disk tier holding the block (track), and the
// last blocks whose references all dropped stay findable for a while
// (recent), which covers a write-back offload's G1 eviction -> host
// store gap and the G4 store's stores (another engine may evict from G4,
// so its events hold no reference).
type blockTokens struct {
	bs     int
	seed   uint64
	m      map[uint64]*blockRef
	recent map[uint64]blockData
	ring   []uint64 // recent's keys, oldest first at ringAt
	ringAt int
}

// blockData is what a vLLM-style Stored event needs of a block: its
// tokens and, for the block at token 0 of a salted request, the request's
// cache_salt (vLLM's extra key of that block).
type blockData struct {
	toks []uint32
	salt string
	lora string // the request's LoRA adapter (every block: vLLM's lora_name)
}

type blockRef struct {
	blockData
	refs int
	held uint8 // tiers holding the block (bit per kvevents.Tier), one ref each
}

// recentBlocks bounds blockTokens.recent.
const recentBlocks = 8192

// reqBlocks is one live request's token history, owned by the loop.
type reqBlocks struct {
	toks   []uint32
	salt   string   // cache_salt: salts block 0 (kvhash.SaltFirst)
	lora   string   // LoRA adapter: its blocks hash with kvhash.Seed(lora, "")
	hashes []uint64 // sequence hashes of its full blocks, registered in m
}

func newBlockTokens(bs int, seed uint64) *blockTokens {
	if seed == 0 {
		seed = kvhash.DefaultSeed
	}
	return &blockTokens{bs: bs, seed: seed, m: make(map[uint64]*blockRef), recent: make(map[uint64]blockData)}
}

// unref drops one reference of h; the last one moves it to recent.
func (b *blockTokens) unref(h uint64) {
	r := b.m[h]
	if r == nil {
		return
	}
	if r.refs--; r.refs > 0 {
		return
	}
	delete(b.m, h)
	if _, ok := b.recent[h]; ok {
		b.recent[h] = r.blockData
		return
	}
	if len(b.ring) < recentBlocks {
		b.ring = append(b.ring, h)
	} else {
		delete(b.recent, b.ring[b.ringAt])
		b.ring[b.ringAt] = h
		b.ringAt = (b.ringAt + 1) % recentBlocks
	}
	b.recent[h] = r.blockData
}

// track follows which device, host and disk tiers hold each block, from
// the engine's events (the G4 store's are not followed, see above).
func (b *blockTokens) track(ev *kvevents.Event) {
	if b == nil || ev.Tier == kvevents.TierExternal {
		return
	}
	bit := uint8(1) << ev.Tier
	switch ev.Kind {
	case kvevents.KindStored:
		for _, blk := range ev.Blocks {
			r := b.m[blk.Hash]
			if r == nil {
				bd, ok := b.recent[blk.Hash]
				if !ok {
					continue
				}
				r = &blockRef{blockData: bd}
				b.m[blk.Hash] = r
			}
			if r.held&bit == 0 {
				r.held |= bit
				r.refs++
			}
		}
	case kvevents.KindRemoved:
		for _, h := range ev.Hashes {
			b.release(h, bit)
		}
	case kvevents.KindCleared:
		var hs []uint64
		for h, r := range b.m {
			if r.held&bit != 0 {
				hs = append(hs, h)
			}
		}
		for _, h := range hs {
			b.release(h, bit)
		}
	}
}

func (b *blockTokens) release(h uint64, bit uint8) {
	if r := b.m[h]; r != nil && r.held&bit != 0 {
		r.held &^= bit
		b.unref(h)
	}
}

func (b *blockTokens) ref(h uint64, bd blockData) {
	if r := b.m[h]; r != nil {
		r.refs++
		return
	}
	b.m[h] = &blockRef{blockData: bd, refs: 1}
}

// add registers a new request's prompt blocks; salt is its cache_salt,
// lora its adapter.
func (b *blockTokens) add(prompt []uint32, salt, lora string) *reqBlocks {
	rb := &reqBlocks{toks: append([]uint32(nil), prompt...), salt: salt, lora: lora}
	b.extend(rb)
	return rb
}

// extend registers the request's blocks completed since the last call.
func (b *blockTokens) extend(rb *reqBlocks) {
	for n := len(rb.hashes); (n+1)*b.bs <= len(rb.toks); n++ {
		blk := rb.toks[n*b.bs : (n+1)*b.bs : (n+1)*b.bs]
		seed := b.seed
		if rb.lora != "" {
			seed = kvhash.Seed(rb.lora, "")
		}
		local := kvhash.Local(blk, seed)
		bd := blockData{toks: blk, lora: rb.lora}
		if n == 0 {
			local = kvhash.SaltFirst(local, rb.salt)
			bd.salt = rb.salt
		}
		h := local
		if n > 0 {
			h = kvhash.SeqNext(rb.hashes[n-1], local)
		}
		rb.hashes = append(rb.hashes, h)
		b.ref(h, bd)
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
		b.unref(h)
	}
	rb.hashes = nil
}

// tokens returns the tokens of each block of a Stored event (nil entries
// for blocks it does not know), the cache salt of its first block and its
// LoRA adapter.
func (b *blockTokens) tokens(ev *kvevents.Event) (out [][]uint32, salt, lora string) {
	out = make([][]uint32, len(ev.Blocks))
	for i, blk := range ev.Blocks {
		var bd blockData
		if r := b.m[blk.Hash]; r != nil {
			bd = r.blockData
		} else {
			bd = b.recent[blk.Hash]
		}
		out[i] = bd.toks
		if i == 0 {
			salt, lora = bd.salt, bd.lora
		}
	}
	return out, salt, lora
}
