package kvevents

import (
	"fmt"
	"testing"
)

func benchEvent(blocks int) Event {
	ev := Event{WorkerID: 123456789, EventID: 987654321, DPRank: 3, Kind: KindStored, HasParent: true, Parent: 1<<63 + 12345}
	for i := 0; i < blocks; i++ {
		ev.Blocks = append(ev.Blocks, Block{Hash: uint64(i)*0x9E3779B97F4A7C15 + 1, Local: uint64(i)*0xC2B2AE3D27D4EB4F + 7})
	}
	return ev
}

// report sets per-event (ns/op) and per-block figures.
func report(b *testing.B, blocks int) {
	per := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	b.ReportMetric(per/float64(blocks), "ns/block")
	b.ReportMetric(float64(blocks)*float64(b.N)/b.Elapsed().Seconds(), "blocks/s")
}

func BenchmarkJSON(b *testing.B) {
	for _, n := range []int{1, 16, 128} {
		ev := benchEvent(n)
		enc := AppendJSON(nil, &ev)
		b.Run(fmt.Sprintf("encode/blocks=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(enc)))
			var buf []byte
			for i := 0; i < b.N; i++ {
				buf = AppendJSON(buf[:0], &ev)
			}
			report(b, n)
		})
		b.Run(fmt.Sprintf("decode/blocks=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(enc)))
			var out Event
			for i := 0; i < b.N; i++ {
				if err := DecodeJSON(enc, &out); err != nil {
					b.Fatal(err)
				}
			}
			report(b, n)
		})
	}
}

func BenchmarkMsgpack(b *testing.B) {
	for _, n := range []int{1, 16, 128} {
		ev := benchEvent(n)
		enc := AppendMsgpack(nil, &ev)
		b.Run(fmt.Sprintf("encode/blocks=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(enc)))
			var buf []byte
			for i := 0; i < b.N; i++ {
				buf = AppendMsgpack(buf[:0], &ev)
			}
			report(b, n)
		})
		b.Run(fmt.Sprintf("decode/blocks=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(enc)))
			var out Event
			for i := 0; i < b.N; i++ {
				if err := DecodeMsgpack(enc, &out); err != nil {
					b.Fatal(err)
				}
			}
			report(b, n)
		})
	}
}

// BenchmarkVLLMDecode decodes a batch with one BlockStored of n blocks of bs
// tokens (realistic token ids up to 150k, uint64 hashes) and, for removes,
// one BlockRemoved of n hashes. The store figures include hashing the tokens
// (kvhash.Local), i.e. the whole per-block ingestion cost.
func BenchmarkVLLMDecode(b *testing.B) {
	for _, bs := range []int{16, 64} {
		for _, n := range []int{1, 16, 128} {
			hashes := make([]any, n)
			for i := range hashes {
				hashes[i] = uint64(i)*0x9E3779B97F4A7C15 + 1<<63
			}
			tokens := make([]any, n*bs)
			for i := range tokens {
				tokens[i] = uint32(i*7919) % 150000
			}
			payload := mp(b, []any{1732000000.125, []any{
				[]any{"BlockStored", hashes, uint64(99), tokens, bs, nil, "GPU", nil},
			}, 0})
			d, err := NewVLLMDecoder(VLLMConfig{BlockSize: bs, WorkerID: 1})
			if err != nil {
				b.Fatal(err)
			}
			b.Run(fmt.Sprintf("stored/bs=%d/blocks=%d", bs, n), func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(payload)))
				var out []Event
				for i := 0; i < b.N; i++ {
					if out, err = d.Decode(out[:0], payload); err != nil {
						b.Fatal(err)
					}
				}
				report(b, n)
			})
		}
	}
	for _, n := range []int{1, 128} {
		hashes := make([]any, n)
		for i := range hashes {
			hashes[i] = uint64(i)*0x9E3779B97F4A7C15 + 1<<63
		}
		payload := mp(b, []any{1732000000.125, []any{[]any{"BlockRemoved", hashes, "GPU"}}, 0})
		d, _ := NewVLLMDecoder(VLLMConfig{BlockSize: 16})
		b.Run(fmt.Sprintf("removed/blocks=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(payload)))
			var out []Event
			var err error
			for i := 0; i < b.N; i++ {
				if out, err = d.Decode(out[:0], payload); err != nil {
					b.Fatal(err)
				}
			}
			report(b, n)
		})
	}
}
