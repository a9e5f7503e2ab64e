package kvhash

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/zeebo/xxh3"
)

// refLocal is the reference local hash: the tokens copied out as
// little-endian uint32s and hashed by xxh3.HashSeed (DESIGN.md §1).
func refLocal(tokens []uint32, seed uint64) uint64 {
	b := make([]byte, 4*len(tokens))
	for i, t := range tokens {
		binary.LittleEndian.PutUint32(b[4*i:], t)
	}
	return xxh3.HashSeed(b, seed)
}

// bothEndians runs f on this machine's path and, if that is the in-place
// little-endian one, again on the portable copying path.
func bothEndians(t *testing.T, f func(t *testing.T)) {
	t.Run("native", f)
	if littleEndian {
		t.Run("portable", func(t *testing.T) {
			littleEndian = false
			defer func() { littleEndian = true }()
			f(t)
		})
	}
}

// TestLocalMatchesReference checks Local, LocalMM and AppendLocal against
// the copying reference for every block size 1..600 tokens and random
// seeds, on the in-place and the portable path.
func TestLocalMatchesReference(t *testing.T) {
	bothEndians(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(16, 3))
		toks := make([]uint32, 1300)
		for i := range toks {
			toks[i] = rng.Uint32()
		}
		for bs := 1; bs <= 600; bs++ {
			seed := DefaultSeed
			if bs%2 == 0 {
				seed = rng.Uint64()
			}
			n := bs + rng.IntN(len(toks)-bs+1)
			got := AppendLocal([]uint64{7}, toks[:n], bs, seed)
			if len(got) != 1+n/bs || got[0] != 7 {
				t.Fatalf("B=%d: %d tokens gave %d hashes after the prefix", bs, n, len(got)-1)
			}
			for i, h := range got[1:] {
				blk := toks[i*bs : (i+1)*bs]
				if want := refLocal(blk, seed); h != want {
					t.Fatalf("B=%d block %d: AppendLocal %d, want %d", bs, i, h, want)
				}
			}
			blk := toks[n-bs : n]
			want := refLocal(blk, seed)
			if got := Local(blk, seed); got != want {
				t.Fatalf("B=%d: Local %d, want %d", bs, got, want)
			}
			if got := LocalMM(blk, nil, seed); got != want {
				t.Fatalf("B=%d: LocalMM without mm %d, want %d", bs, got, want)
			}
		}
	})
}

// TestGoldenVectorsPortable runs the DESIGN.md §1 golden vectors on the
// portable (big-endian) path too.
func TestGoldenVectorsPortable(t *testing.T) {
	if !littleEndian {
		t.Skip("the native path is the portable one; TestGoldenVectors covers it")
	}
	littleEndian = false
	defer func() { littleEndian = true }()
	TestGoldenVectors(t)
}

// TestAppendLocalNoAllocs: hashing a 32k-token prompt into a slice with room
// allocates nothing, with the default seed and with a salted one.
func TestAppendLocalNoAllocs(t *testing.T) {
	toks := seq(0, 512*64)
	dst := make([]uint64, 0, 512)
	for _, seed := range []uint64{DefaultSeed, Seed("adapter-a", "")} {
		if n := testing.AllocsPerRun(10, func() { dst = AppendLocal(dst[:0], toks, 64, seed) }); n != 0 {
			t.Errorf("seed %d: %v allocs per AppendLocal, want 0", seed, n)
		}
		if n := testing.AllocsPerRun(10, func() { _ = Local(toks[:64], seed) }); n != 0 {
			t.Errorf("seed %d: %v allocs per Local, want 0", seed, n)
		}
	}
}

// FuzzLocal differentially tests the block hashes against the copying
// xxh3.HashSeed reference on arbitrary tokens, block sizes and seeds.
func FuzzLocal(f *testing.F) {
	f.Add([]byte{1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0}, uint16(4), DefaultSeed)
	f.Add(make([]byte, 4*64*3+5), uint16(64), uint64(0))
	f.Add(make([]byte, 4*1100), uint16(300), ^uint64(0))
	f.Fuzz(func(t *testing.T, raw []byte, bs uint16, seed uint64) {
		toks := make([]uint32, len(raw)/4)
		for i := range toks {
			toks[i] = binary.LittleEndian.Uint32(raw[4*i:])
		}
		b := int(bs%1024) + 1
		got := AppendLocal(nil, toks, b, seed)
		if len(got) != len(toks)/b {
			t.Fatalf("%d tokens at B=%d: %d hashes", len(toks), b, len(got))
		}
		for i, h := range got {
			if want := refLocal(toks[i*b:(i+1)*b], seed); h != want {
				t.Fatalf("B=%d block %d: %d, want %d", b, i, h, want)
			}
		}
		if want := refLocal(toks, seed); Local(toks, seed) != want {
			t.Fatalf("Local of %d tokens: %d, want %d", len(toks), Local(toks, seed), want)
		}
	})
}

// TestSeqNextMatchesReference holds the inline 16-byte sequence hash equal
// to xxh3.HashSeed of the two little-endian words under DefaultSeed, on
// edge values and random pairs.
func TestSeqNextMatchesReference(t *testing.T) {
	ref := func(parent, local uint64) uint64 {
		var b [16]byte
		binary.LittleEndian.PutUint64(b[0:], parent)
		binary.LittleEndian.PutUint64(b[8:], local)
		return xxh3.HashSeed(b[:], DefaultSeed)
	}
	edges := []uint64{0, 1, 11, 22, DefaultSeed, 1 << 63, ^uint64(0), seqFlipLo, seqFlipHi}
	for _, p := range edges {
		for _, l := range edges {
			if got, want := SeqNext(p, l), ref(p, l); got != want {
				t.Fatalf("SeqNext(%d, %d) = %d, want %d", p, l, got, want)
			}
		}
	}
	rng := rand.New(rand.NewPCG(16, 4))
	locals := make([]uint64, 100_000)
	for i := range locals {
		locals[i] = rng.Uint64()
	}
	chain := AppendSeq(nil, locals)
	prev := locals[0]
	for i := 1; i < len(locals); i++ {
		prev = ref(prev, locals[i])
		if chain[i] != prev {
			t.Fatalf("chain[%d] = %d, want %d", i, chain[i], prev)
		}
	}
}
