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
