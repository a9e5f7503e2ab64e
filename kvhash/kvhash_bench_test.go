package kvhash

import (
	"fmt"
	"github.com/zeebo/xxh3"
	"testing"
)

func BenchmarkLocalHashes(b *testing.B) {
	for _, bs := range []int{16, 64, 512} {
		b.Run(fmt.Sprintf("block=%d", bs), func(b *testing.B) {
			toks := seq(0, 8192)
			dst := make([]uint64, 0, len(toks)/bs)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				dst = AppendLocal(dst[:0], toks, bs, DefaultSeed)
			}
			b.ReportMetric(float64(b.N)*float64(len(toks))/b.Elapsed().Seconds(), "tokens/s")
		})
	}
}

func BenchmarkSeqHashes(b *testing.B) {
	locals := LocalHashes(seq(0, 8192), 16, DefaultSeed)
	dst := make([]uint64, 0, len(locals))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		dst = AppendSeq(dst[:0], locals)
	}
	b.ReportMetric(float64(b.N)*float64(len(locals))/b.Elapsed().Seconds(), "blocks/s")
}

// BenchmarkHashBlock compares one 64-token block (256 bytes) hashed by
// xxh3.HashSeed, which derives the seeded secret per call, with
// longKeys.hash (the AVX2 loop, one block per call) under a secret
// derived once.
func BenchmarkHashBlock(b *testing.B) {
	blk := tokenBytesLE(seq(0, 64))
	var sink uint64
	b.Run("xxh3.HashSeed", func(b *testing.B) {
		for range b.N {
			sink += xxh3.HashSeed(blk, DefaultSeed)
		}
	})
	b.Run("longKeys.hash", func(b *testing.B) {
		k := newLongKeys(DefaultSeed)
		for range b.N {
			sink += k.hash(blk)
		}
	})
	_ = sink
}

// BenchmarkLocalSeq512 hashes a route's prompt as the router does
// (AppendLocalSeq: local hashes and their chain), 512 blocks of 64 tokens,
// in each kernel the CPU has: avx2 (hashBlocksAVX2) and avx512
// (hashBlocksAVX512).
func BenchmarkLocalSeq512(b *testing.B) {
	toks := seq(0, 512*64)
	locals := make([]uint64, 0, 512)
	seqs := make([]uint64, 0, 512)
	defer func(v bool) { useAVX512 = v }(useAVX512)
	for _, k := range []struct {
		name string
		ok   bool
	}{{"avx2", useAVX2}, {"avx512", useAVX512}} {
		b.Run(k.name, func(b *testing.B) {
			if !k.ok {
				b.Skip("not on this CPU")
			}
			useAVX512 = k.name == "avx512"
			b.ReportAllocs()
			for range b.N {
				locals, seqs = AppendLocalSeq(locals[:0], seqs[:0], toks, 64, DefaultSeed)
			}
			b.ReportMetric(float64(b.N)*float64(len(toks))/b.Elapsed().Seconds(), "tokens/s")
		})
	}
}
