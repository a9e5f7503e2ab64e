package eventplane

import (
	"testing"

	"github.com/kvrouter/kvrouter/kvevents"
)

// The size hint covers the encoding of realistic events (large ids, a
// storage tier, parents), so a payload is allocated once.
func TestEnvelopeSizeHint(t *testing.T) {
	for _, bpe := range []int{0, 1, 16, 64} {
		evs := make([]kvevents.Event, 64)
		for i := range evs {
			ev := kvevents.Event{WorkerID: 1<<63 + uint64(i), EventID: 1<<62 + uint64(i), DPRank: 7,
				Kind: kvevents.KindStored, HasParent: true, Parent: ^uint64(0), Tier: kvevents.TierHostPinned,
				HasStart: true, StartPosition: 1 << 31}
			for j := 0; j < bpe; j++ {
				ev.Blocks = append(ev.Blocks, kvevents.Block{Hash: ^uint64(j), Local: ^uint64(j) >> 1})
			}
			if bpe == 0 {
				ev.Kind, ev.HasParent = kvevents.KindRemoved, false
				ev.Hashes = []uint64{^uint64(0), ^uint64(1)}
			}
			evs[i] = ev
		}
		for _, f := range []Format{FormatMsgpack, FormatJSON} {
			for _, n := range []int{1, 64} {
				b, err := EncodeEnvelope(nil, f, evs[:n])
				if err != nil {
					t.Fatal(err)
				}
				if hint := envelopeSizeHint(f, evs[:n]); hint < len(b) {
					t.Errorf("%s, %d events of %d blocks: hint %d < size %d", f, n, bpe, hint, len(b))
				}
			}
		}
	}
}
