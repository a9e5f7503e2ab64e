package ordering_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/indexer"
	"github.com/kvrouter/kvrouter/kvevents"
	. "github.com/kvrouter/kvrouter/ordering"
)

const (
	fuzzWorkers = 3
	fuzzIDs     = 16 // genuine ids 1..fuzzIDs per worker
)

// block is the content of event (w, id) in a life: genuine, hostile or
// the restarted publisher's; distinct hashes so the index tells them apart.
func block(life, w, id uint64) uint64 { return life<<56 | w<<40 | id }

func storedEv(life, w, id uint64) kvevents.Event {
	h := block(life, w, id)
	return kvevents.Event{WorkerID: w, EventID: id, Kind: kvevents.KindStored,
		Blocks: []kvevents.Block{{Hash: h, Local: h}}}
}

// dump is the index's whole state, canonical.
func dump(ix indexer.Index) string {
	var out []string
	for _, ev := range ix.Dump() {
		for _, b := range ev.Blocks {
			out = append(out, fmt.Sprintf("%d:%x", ev.WorkerID, b.Hash))
		}
	}
	slices.Sort(out)
	return fmt.Sprint(out)
}

// FuzzOrder feeds an Order a fuzzed sequence of (worker, id) deliveries
// and checks the index it drives against a reference that applies only
// the valid events.
//
// Phase 1, a genuine stream redelivered and reordered: the input picks
// which genuine event (worker, id in 1..16) is delivered next, any number
// of times, some never. After every gap has expired, a worker holds
// exactly its events above its first missing id when any was delivered
// above it (the gap was given up: cleared, then the buffered events
// applied), else all of them.
//
// Phase 2, hostile: the input injects events with arbitrary ids (0, 1,
// small, 10^12, 2^63, ...; stored or cleared) and poisoned content, then
// every worker's publisher restarts (a Cleared at id 1, then stored 2..4).
// Whatever came before, each worker must hold exactly the restarted
// publisher's blocks: no injected id may swallow the real events.
//
// Throughout, each worker's emitted ids increase strictly between two
// Cleared events (the Order's invariant).
func FuzzOrder(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5}, []byte{})
	f.Add([]byte{5, 4, 3, 2, 1, 0, 0, 0}, []byte{0x10, 0x21, 0x32})
	f.Add([]byte{1, 1, 1, 2, 2, 7, 9}, []byte{0xff, 0x0f, 0x53, 0x44})
	f.Add([]byte{0, 3, 6, 9, 12, 15, 18}, []byte{0x91, 0x92, 0x13})
	f.Fuzz(func(t *testing.T, genuine, hostile []byte) {
		t0 := time.Unix(1000, 0)
		o := New(Config{MaxPending: 64, GapTimeout: time.Second, MaxJump: 1 << 20}, nil)
		ix := indexer.NewRadix(indexer.RadixConfig{})
		lastOut := map[uint64]uint64{}
		seenOut := map[uint64]bool{}
		apply := func(out []kvevents.Event) {
			for i := range out {
				ev := &out[i]
				if ev.Kind == kvevents.KindCleared {
					delete(seenOut, ev.WorkerID)
				} else {
					if seenOut[ev.WorkerID] && ev.EventID <= lastOut[ev.WorkerID] {
						t.Fatalf("worker %d: id %d emitted after %d with no Cleared between", ev.WorkerID, ev.EventID, lastOut[ev.WorkerID])
					}
					seenOut[ev.WorkerID], lastOut[ev.WorkerID] = true, ev.EventID
				}
				_ = ix.Apply(ev)
			}
		}

		// Phase 1.
		delivered := map[uint64]map[uint64]bool{}
		for _, b := range genuine {
			w, id := uint64(b%fuzzWorkers)+1, uint64(b/fuzzWorkers)%fuzzIDs+1
			if delivered[w] == nil {
				delivered[w] = map[uint64]bool{}
			}
			delivered[w][id] = true
			ev := storedEv(1, w, id)
			apply(o.Offer(nil, &ev, t0))
		}
		apply(o.Expire(nil, t0.Add(time.Hour)))
		ref := indexer.NewRadix(indexer.RadixConfig{})
		for w := uint64(1); w <= fuzzWorkers; w++ {
			missing := uint64(fuzzIDs + 1)
			for id := uint64(1); id <= fuzzIDs; id++ {
				if !delivered[w][id] {
					missing = id
					break
				}
			}
			above := false
			for id := range delivered[w] {
				above = above || id > missing
			}
			for id := range delivered[w] {
				if (above && id > missing) || (!above && id < missing) {
					ev := storedEv(1, w, id)
					_ = ref.Apply(&ev)
				}
			}
		}
		if got, want := dump(ix), dump(ref); got != want {
			t.Fatalf("after the genuine stream: index %s, want %s", got, want)
		}

		// Phase 2.
		ids := []uint64{0, 1, 2, 3, 17, 100, 1 << 19, 1 << 21, 1e12, 1 << 63, ^uint64(0)}
		for i := 0; i+1 < len(hostile); i += 2 {
			w := uint64(hostile[i]%fuzzWorkers) + 1
			id := ids[int(hostile[i]/fuzzWorkers)%len(ids)] + uint64(hostile[i+1]&7)
			ev := storedEv(2, w, id)
			if hostile[i+1]&8 != 0 {
				ev = kvevents.Event{WorkerID: w, EventID: id, Kind: kvevents.KindCleared}
			}
			apply(o.Offer(nil, &ev, t0.Add(2*time.Hour)))
		}
		apply(o.Expire(nil, t0.Add(3*time.Hour)))
		ref = indexer.NewRadix(indexer.RadixConfig{})
		for w := uint64(1); w <= fuzzWorkers; w++ {
			cl := kvevents.Event{WorkerID: w, EventID: 1, Kind: kvevents.KindCleared}
			apply(o.Offer(nil, &cl, t0.Add(3*time.Hour)))
			for id := uint64(2); id <= 4; id++ {
				ev := storedEv(3, w, id)
				apply(o.Offer(nil, &ev, t0.Add(3*time.Hour)))
				_ = ref.Apply(&ev)
			}
		}
		if got, want := dump(ix), dump(ref); got != want {
			t.Fatalf("after the hostile events and a restart: index %s, want %s", got, want)
		}
	})
}
