package kvhash

import (
	"encoding/binary"
	"slices"

	"github.com/zeebo/xxh3"
)

// DefaultSeed is the XXH3 seed of every local and sequence hash (Dynamo's).
const DefaultSeed uint64 = 1337

// Seed returns the local-hash seed for a LoRA adapter name and a cache
// namespace: 1337, plus XXH3(lora, 0) when lora is set, plus
// XXH3(namespace, 1) when namespace is set (wrapping adds). An empty string
// means absent, so Seed("", "") == DefaultSeed.
func Seed(lora, namespace string) uint64 {
	seed := DefaultSeed
	if lora != "" {
		seed += xxh3.HashStringSeed(lora, 0)
	}
	if namespace != "" {
		seed += xxh3.HashStringSeed(namespace, 1)
	}
	return seed
}

// maxStackBlock is the largest block (in tokens) the portable path (big-endian
// machines) converts in a stack buffer; larger blocks allocate once per
// call. 512 covers every common engine block size; at B=512 it measured ~8%
// more tokens/s than a per-call allocation (BenchmarkLocalHashes/block=512,
// alternating runs).
const maxStackBlock = 512

// Local returns the local hash of one block of tokens with the given seed.
func Local(tokens []uint32, seed uint64) uint64 {
	if littleEndian {
		return xxh3.HashSeed(tokenBytes(tokens), seed)
	}
	var stack [maxStackBlock * 4]byte
	var buf []byte
	if len(tokens) <= maxStackBlock {
		buf = stack[:len(tokens)*4]
	} else {
		buf = make([]byte, len(tokens)*4)
	}
	putTokens(buf, tokens)
	return xxh3.HashSeed(buf, seed)
}

// LocalMM returns the local hash of a block that overlaps multimodal
// objects: their hashes, sorted ascending, are appended to the token bytes as
// little-endian uint64. With no mm hashes it equals Local.
func LocalMM(tokens []uint32, mmHashes []uint64, seed uint64) uint64 {
	if len(mmHashes) == 0 {
		return Local(tokens, seed)
	}
	sorted := slices.Clone(mmHashes)
	slices.Sort(sorted)
	buf := make([]byte, len(tokens)*4+len(sorted)*8)
	putTokens(buf, tokens)
	off := len(tokens) * 4
	for _, h := range sorted {
		binary.LittleEndian.PutUint64(buf[off:], h)
		off += 8
	}
	return xxh3.HashSeed(buf, seed)
}

// AppendLocal appends the local hash of every full block of tokens to dst
// and returns the extended slice. blockSize must be positive; a trailing
// partial block is ignored.
func AppendLocal(dst []uint64, tokens []uint32, blockSize int, seed uint64) []uint64 {
	dst, _, _ = appendLocal(dst, nil, nil, false, false, tokens, blockSize, seed)
	return dst
}

// AppendLocalSeq appends the local hashes of the full blocks of tokens to
// locals, as AppendLocal, and their sequence-hash chain to seqs, as
// AppendSeq of them, and returns both extended slices. Where blocks are
// hashed in AVX2 (long.go), the chain is computed beside the hashing.
func AppendLocalSeq(locals, seqs []uint64, tokens []uint32, blockSize int, seed uint64) ([]uint64, []uint64) {
	locals, seqs, _ = appendLocal(locals, seqs, nil, true, false, tokens, blockSize, seed)
	return locals, seqs
}

// appendLocal is AppendLocal, and also AppendSeq into seqs when withSeq
// and AppendPrefixIDs into ids when withIDs.
func appendLocal(dst, seqs, ids []uint64, withSeq, withIDs bool, tokens []uint32, blockSize int, seed uint64) ([]uint64, []uint64, []uint64) {
	if blockSize <= 0 {
		panic("kvhash: block size must be positive")
	}
	n := len(tokens) / blockSize
	dst = slices.Grow(dst, n)
	if n == 0 {
		return dst, seqs, ids
	}
	m := len(dst)
	w := blockSize * 4
	// Blocks that read the seeded secret: derive it once (long.go).
	var k longKeys
	long := useAVX2 && w >= longMin && w <= blockLen
	if long {
		k = newLongKeys(seed)
	}
	if littleEndian {
		all := tokenBytes(tokens[:n*blockSize])
		if long {
			// All blocks in one call, and the chain beside them.
			dst = dst[:m+n]
			var sd, id *uint64
			if withSeq {
				ms := len(seqs)
				seqs = slices.Grow(seqs, n)[:ms+n]
				sd = &seqs[ms]
			}
			idsHere := withIDs && useAVX512 && w <= 256
			if idsHere {
				mi := len(ids)
				ids = slices.Grow(ids, n)[:mi+n]
				id = &ids[mi]
			}
			hashBlocks(&dst[m], &all[0], n, w, &k.w[0], &k.last[0], &k.merge[0], sd, id, seqFlipLo, seqFlipHi)
			if withIDs && !idsHere {
				ids = AppendPrefixIDs(ids, dst[m:])
			}
			return dst, seqs, ids
		}
		for i := 0; i < n; i++ {
			dst = append(dst, xxh3.HashSeed(all[i*w:(i+1)*w], seed))
		}
	} else {
		var stack [maxStackBlock * 4]byte
		var buf []byte
		if blockSize <= maxStackBlock {
			buf = stack[:w]
		} else {
			buf = make([]byte, w)
		}
		for i := 0; i < n; i++ {
			putTokens(buf, tokens[i*blockSize:(i+1)*blockSize])
			if long {
				dst = append(dst, k.hash(buf))
			} else {
				dst = append(dst, xxh3.HashSeed(buf, seed))
			}
		}
	}
	if withSeq {
		seqs = AppendSeq(seqs, dst[m:])
	}
	if withIDs {
		ids = AppendPrefixIDs(ids, dst[m:])
	}
	return dst, seqs, ids
}

// LocalHashes returns the local hash of every full block of tokens.
func LocalHashes(tokens []uint32, blockSize int, seed uint64) []uint64 {
	return AppendLocal(nil, tokens, blockSize, seed)
}

// SeqNext returns the sequence hash of a block whose prefix has sequence
// hash parent and whose local hash is local: XXH3(LE64(parent) ||
// LE64(local), seed 1337). Sequence hashes are never salted.
func SeqNext(parent, local uint64) uint64 { return seqNext(parent, local) }

// AppendSeq appends the sequence-hash chain of locals to dst:
// seq[0] = local[0], seq[i] = SeqNext(seq[i-1], local[i]).
func AppendSeq(dst []uint64, locals []uint64) []uint64 {
	dst = slices.Grow(dst, len(locals))
	var prev uint64
	for i, l := range locals {
		if i == 0 {
			prev = l
		} else {
			prev = seqNext(prev, l)
		}
		dst = append(dst, prev)
	}
	return dst
}

// SeqHashes returns the sequence-hash chain of locals.
func SeqHashes(locals []uint64) []uint64 { return AppendSeq(nil, locals) }

// Blocks is the number of full blocks in n tokens.
func Blocks(n, blockSize int) int { return n / blockSize }
