package kvhash

import (
	"fmt"
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
