package eventplane_test

import (
	"fmt"
	"testing"

	. "github.com/kvrouter/kvrouter/internal/eventplane"
	"github.com/kvrouter/kvrouter/kvevents"
)

// benchBatch is one stream message's worth of Stored events of bpe blocks
// with full-width hashes (as engines send them).
func benchBatch(n, bpe int) []kvevents.Event {
	evs := make([]kvevents.Event, n)
	h := uint64(0x9E3779B97F4A7C15)
	for i := range evs {
		ev := kvevents.Event{WorkerID: 7, EventID: uint64(i + 1), Kind: kvevents.KindStored, HasParent: i > 0, Parent: h}
		for j := 0; j < bpe; j++ {
			h = h*6364136223846793005 + 1442695040888963407
			ev.Blocks = append(ev.Blocks, kvevents.Block{Hash: h, Local: h ^ h>>29})
		}
		evs[i] = ev
	}
	return evs
}

// Envelope encode/decode per event, by format and size: msgpack is the
// default because it is the cheaper of the two.
func BenchmarkEnvelope(b *testing.B) {
	for _, f := range []Format{FormatMsgpack, FormatJSON} {
		for _, sz := range []struct{ n, bpe int }{{8, 1}, {64, 16}} {
			evs := benchBatch(sz.n, sz.bpe)
			payload, err := EncodeEnvelope(nil, f, evs)
			if err != nil {
				b.Fatal(err)
			}
			name := fmt.Sprintf("%s/%dx%d", f, sz.n, sz.bpe)
			b.Run("encode/"+name, func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(payload)))
				var buf []byte
				for b.Loop() {
					buf, _ = EncodeEnvelope(buf[:0], f, evs)
				}
			})
			b.Run("decode/"+name, func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(payload)))
				var dst []kvevents.Event
				for b.Loop() {
					if dst, err = DecodeEnvelope(dst[:0], payload); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
