package kvhash

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/zeebo/xxh3"
)

// TestHashLongMatchesXXH3 holds longKeys.hash equal to xxh3.HashSeed over
// random inputs of every length from 0 to 4 KiB, and hashBlocksAVX2, with
// its sequence chain, at every block length it takes (241 to 1024 bytes) (four secret blocks: the scramble and partial last blocks) under
// the default, zero, salted and random seeds.
func TestHashLongMatchesXXH3(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 6))
	buf := make([]byte, 4096)
	for i := range buf {
		buf[i] = byte(rng.Uint32())
	}
	if !useAVX2 {
		t.Skip("no AVX2: longKeys.hash is xxh3.HashSeed")
	}
	seeds := []uint64{DefaultSeed, 0, Seed("adapter-a", "tenant-a"), rng.Uint64(), ^uint64(0)}
	for _, seed := range seeds {
		k := newLongKeys(seed)
		for n := 0; n <= len(buf); n++ {
			// A fresh random window at each length, so no two lengths
			// hash the same bytes.
			off := rng.IntN(len(buf) - n + 1)
			b := buf[off : off+n]
			if got, want := k.hash(b), xxh3.HashSeed(b, seed); got != want {
				t.Fatalf("seed %d, %d bytes: got %d, want %d", seed, n, got, want)
			}
		}
		// hashBlocksAVX2: one to four consecutive blocks (its chain takes
		// each block's step one block late, so the first two and the last
		// are special) of every length it takes.
		var got, seqs [4]uint64
		for w := longMin; w <= blockLen; w++ {
			n := 1 + w%len(got)
			b := buf[rng.IntN(len(buf)-n*w+1):][:n*w]
			hashBlocksAVX2(&got[0], &b[0], n, w, &k.w[0], &k.last[0], &k.merge[0], &seqs[0], seqFlipLo, seqFlipHi)
			for i, h := range got[:n] {
				if want := xxh3.HashSeed(b[i*w:(i+1)*w], seed); h != want {
					t.Fatalf("seed %d, block %d of %d bytes: got %d, want %d", seed, i, w, h, want)
				}
			}
			if want := SeqHashes(got[:n]); !slices.Equal(seqs[:n], want) {
				t.Fatalf("seed %d, %d blocks of %d bytes: chain %v, want %v", seed, n, w, seqs[:n], want)
			}
		}
	}
}

// TestHashBlocks256AVX512MatchesXXH3 holds hashBlocks256AVX512 equal to
// xxh3.HashSeed at every block length it takes (241 to 256 bytes), for one
// to six blocks (the first two blocks' chain steps are peeled off its
// loops, the last runs after them), alone, with the sequence chain, with
// the chain and the prefix ids, and with the ids alone, under the seeds of
// TestHashLongMatchesXXH3.
func TestHashBlocks256AVX512MatchesXXH3(t *testing.T) {
	if !useAVX512 {
		t.Skip("no AVX-512")
	}
	rng := rand.New(rand.NewPCG(3, 6))
	buf := make([]byte, 4096)
	for i := range buf {
		buf[i] = byte(rng.Uint32())
	}
	seeds := []uint64{DefaultSeed, 0, Seed("adapter-a", "tenant-a"), rng.Uint64(), ^uint64(0)}
	for _, seed := range seeds {
		k := newLongKeys(seed)
		for w := longMin; w <= 256; w++ {
			for n := 1; n <= 6; n++ {
				b := buf[rng.IntN(len(buf)-n*w+1):][:n*w]
				for mode := range 4 { // hashes; and chain; and ids; ids without chain
					var got, seqs, ids [7]uint64
					var sd, id *uint64
					if mode == 1 || mode == 2 {
						sd = &seqs[0]
					}
					if mode > 1 {
						id = &ids[0]
					}
					hashBlocks256AVX512(&got[0], &b[0], n, w, &k.w[0], &k.last[0], &k.merge[0], sd, id, seqFlipLo, seqFlipHi)
					for i, h := range got[:n] {
						if want := xxh3.HashSeed(b[i*w:(i+1)*w], seed); h != want {
							t.Fatalf("seed %d, block %d of %d of %d bytes: got %d, want %d", seed, i, n, w, h, want)
						}
					}
					var wantSeqs, wantIDs [7]uint64
					if mode == 1 || mode == 2 {
						copy(wantSeqs[:], SeqHashes(got[:n]))
					}
					if mode > 1 {
						copy(wantIDs[:], AppendPrefixIDs(nil, got[:n]))
					}
					if got[n] != 0 || seqs != wantSeqs || ids != wantIDs {
						t.Fatalf("seed %d, %d blocks of %d bytes, mode %d: hashes %v, chain %v, ids %v; want chain %v, ids %v",
							seed, n, w, mode, got, seqs, ids, wantSeqs, wantIDs)
					}
				}
			}
		}
	}
}

// TestAppendLocalMatchesLocal holds AppendLocal (one secret per call)
// equal to Local (xxh3.HashSeed per block), AppendLocalSeq to
// AppendLocal and SeqHashes, and AppendLocalSeqID and AppendLocalID to
// those and AppendPrefixIDs, at block sizes on both sides of
// the long path (60/61 tokens = 240/244 bytes), on both byte paths, with
// and without AVX2 and AVX-512.
func TestAppendLocalMatchesLocal(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 7))
	toks := make([]uint32, 4096)
	for i := range toks {
		toks[i] = rng.Uint32()
	}
	defer func(le, avx, avx512 bool) { littleEndian, useAVX2, useAVX512 = le, avx, avx512 }(littleEndian, useAVX2, useAVX512)
	hasAVX2, hasAVX512 := useAVX2, useAVX512
	for _, mode := range [][3]bool{{true, true, true}, {true, true, false}, {true, false, false}, {false, true, false}, {false, false, false}} {
		le := mode[0]
		littleEndian, useAVX2, useAVX512 = le, mode[1] && hasAVX2, mode[2] && hasAVX512
		for _, bs := range []int{1, 4, 16, 32, 60, 61, 64, 100, 128, 256, 257, 512, 1024} {
			for _, seed := range []uint64{DefaultSeed, Seed("adapter-a", "")} {
				got := AppendLocal(nil, toks, bs, seed)
				if len(got) != len(toks)/bs {
					t.Fatalf("B=%d: %d blocks, want %d", bs, len(got), len(toks)/bs)
				}
				// AppendLocalSeq after what the buffers already hold.
				pre := []uint64{7, 8}
				locals, seqs := AppendLocalSeq(pre[:1:1], pre[1:], toks, bs, seed)
				if !slices.Equal(locals[1:], got) || locals[0] != 7 {
					t.Fatalf("le=%v B=%d: AppendLocalSeq locals differ from AppendLocal", le, bs)
				}
				if want := SeqHashes(got); !slices.Equal(seqs[1:], want) || seqs[0] != 8 {
					t.Fatalf("le=%v B=%d: AppendLocalSeq chain differs from SeqHashes", le, bs)
				}
				// AppendLocalSeqID: the same, and the prefix ids.
				pre3 := []uint64{7, 8, 9}
				l3, s3, ids := AppendLocalSeqID(pre3[:1:1], pre3[1:2:2], pre3[2:], toks, bs, seed)
				if !slices.Equal(l3, locals) || !slices.Equal(s3, seqs) {
					t.Fatalf("le=%v B=%d: AppendLocalSeqID hashes differ from AppendLocalSeq", le, bs)
				}
				if want := AppendPrefixIDs([]uint64{9}, got); !slices.Equal(ids, want) {
					t.Fatalf("le=%v B=%d: AppendLocalSeqID ids differ from AppendPrefixIDs", le, bs)
				}
				// AppendLocalID: the hashes and the ids, no chain.
				l4, ids4 := AppendLocalID(pre3[:1:1], pre3[2:], toks, bs, seed)
				if !slices.Equal(l4, locals) || !slices.Equal(ids4, ids) {
					t.Fatalf("le=%v B=%d: AppendLocalID differs from AppendLocalSeqID", le, bs)
				}
				for i, h := range got {
					if want := xxh3.HashSeed(tokenBytesLE(toks[i*bs:(i+1)*bs]), seed); h != want {
						t.Fatalf("le=%v B=%d seed %d block %d: got %d, want %d", le, bs, seed, i, h, want)
					}
				}
			}
		}
	}
}

// tokenBytesLE is DESIGN.md §1's byte string of tokens, built portably.
func tokenBytesLE(toks []uint32) []byte {
	b := make([]byte, 4*len(toks))
	putTokens(b, toks)
	return b
}
