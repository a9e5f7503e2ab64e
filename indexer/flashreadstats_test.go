package indexer

import (
	"testing"

	"github.com/kvrouter/kvrouter/kvevents"
)

// TestFlashSafeLookupCounters: Stats counts a lookup begun while a writer
// holds the lock as SafeStarted, and none on a quiet index; Sharded sums
// its shards' counts.
func TestFlashSafeLookupCounters(t *testing.T) {
	f := NewFlash(FlashConfig{})
	ev := kvevents.Event{WorkerID: 1, Kind: kvevents.KindStored,
		Blocks: []kvevents.Block{{Hash: 11, Local: 1}, {Hash: 12, Local: 2}}}
	if err := f.Apply(&ev); err != nil {
		t.Fatal(err)
	}
	q := []uint64{1, 2}
	for range 3 {
		if got := f.FindMatches(q); len(got) != 1 || got[0].Blocks != 2 {
			t.Fatalf("quiet lookup: %v", got)
		}
	}
	if st := f.Stats(); st.SafeStarted != 0 || st.SafeRedone != 0 {
		t.Fatalf("quiet index: safe started %d redone %d, want 0 0", st.SafeStarted, st.SafeRedone)
	}
	f.lock() // a writer holds the lock: lookups run in safe mode
	for range 2 {
		if got := f.FindMatches(q); len(got) != 1 || got[0].Blocks != 2 {
			t.Fatalf("lookup during a write: %v", got)
		}
	}
	f.unlock()
	if st := f.Stats(); st.SafeStarted != 2 || st.SafeRedone != 0 {
		t.Fatalf("after 2 lookups during a write: safe started %d redone %d, want 2 0", st.SafeStarted, st.SafeRedone)
	}

	shards := []*Flash{NewFlash(FlashConfig{}), NewFlash(FlashConfig{})}
	k := 0
	s := NewSharded(2, func() Index { k++; return shards[k-1] })
	for _, sh := range shards {
		sh.lock()
	}
	s.FindMatches(q)
	for _, sh := range shards {
		sh.unlock()
	}
	if st := s.Stats(); st.SafeStarted != 2 {
		t.Fatalf("sharded: safe started %d, want 2 (one per shard)", st.SafeStarted)
	}
}
