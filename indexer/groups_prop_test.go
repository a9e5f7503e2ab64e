package indexer_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/kvrouter/kvrouter/indexer"
	"github.com/kvrouter/kvrouter/indexer/indexertest"
	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/kvhash"
)

// A plain index never files a sliding or state group's event as full
// attention (DESIGN.md §13): it refuses it and changes nothing.
func TestPlainIndexRefusesGroupEvents(t *testing.T) {
	for _, impl := range implementations {
		t.Run(impl.name, func(t *testing.T) {
			idx := impl.new()
			for _, g := range []kvevents.Group{
				{Index: 1, Kind: kvevents.GroupSliding, Window: 128},
				{Index: 2, Kind: kvevents.GroupState},
			} {
				st := kvevents.Event{WorkerID: 1, Kind: kvevents.KindStored, Group: g,
					Blocks: []kvevents.Block{{Hash: 1, Local: 1}}}
				if err := idx.Apply(&st); !errors.Is(err, indexer.ErrGroupEvent) || !errors.Is(err, indexer.ErrBadEvent) {
					t.Fatalf("store of %s: %v", g, err)
				}
				rm := kvevents.Event{WorkerID: 1, Kind: kvevents.KindRemoved, Group: g, Hashes: []uint64{1}}
				if err := idx.Apply(&rm); !errors.Is(err, indexer.ErrGroupEvent) {
					t.Fatalf("remove of %s: %v", g, err)
				}
			}
			// A full-attention group of another index is full attention.
			st := kvevents.Event{WorkerID: 1, Kind: kvevents.KindStored, Group: kvevents.Group{Index: 3},
				Blocks: []kvevents.Block{{Hash: 1, Local: 1}}}
			if err := idx.Apply(&st); err != nil {
				t.Fatal(err)
			}
			if s := idx.Stats(); s.Blocks != 1 || s.Rejected != 4 {
				t.Fatalf("stats %+v, want 1 block and 4 rejected", s)
			}
		})
	}
}

// hybridStreams returns per-worker event streams (workerEvents) in which
// even workers also mirror every store into a sliding group and every
// other store's last block into a state group, and drop old window
// blocks.
func hybridStreams(rng *rand.Rand) [][]kvevents.Event {
	var streams [][]kvevents.Event
	for id := range uint64(6) {
		w := kvevents.Worker{ID: id + 1}
		var out []kvevents.Event
		for _, ev := range workerEvents(rng, w, 200) {
			out = append(out, ev)
			if id%2 == 1 || ev.Kind != kvevents.KindStored || len(ev.Blocks) == 0 {
				continue
			}
			sw := ev
			sw.Group = kvevents.Group{Index: 1, Kind: kvevents.GroupSliding, Window: 33}
			out = append(out, sw)
			if rng.IntN(2) == 0 {
				k := len(ev.Blocks) - 1
				st := kvevents.Event{WorkerID: w.ID, Kind: kvevents.KindStored, Group: kvevents.Group{Index: 2, Kind: kvevents.GroupState},
					Blocks: ev.Blocks[k:], HasParent: true, Parent: ev.Parent}
				if k > 0 {
					st.Parent = ev.Blocks[k-1].Hash
				} else if !ev.HasParent {
					st.HasParent = false
				}
				out = append(out, st)
			}
			if len(ev.Blocks) > 2 {
				out = append(out, kvevents.Event{WorkerID: w.ID, Kind: kvevents.KindRemoved,
					Group: kvevents.Group{Index: 1, Kind: kvevents.GroupSliding}, Hashes: []uint64{ev.Blocks[0].Hash}})
			}
		}
		streams = append(streams, out)
	}
	return streams
}

// The overlay behind Concurrent's writers (batches, many goroutines,
// lookups meanwhile) ends as the same events applied in order do.
func TestGroupsConcurrent(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	streams := hybridStreams(rng)
	newIdx := func() *indexer.Groups {
		return indexer.NewGroups(indexer.NewFlash(indexer.FlashConfig{Stride: 4}), indexer.GroupsConfig{BlockSize: 16})
	}
	seq := newIdx()
	for _, s := range streams {
		for i := range s {
			_ = seq.Apply(&s[i])
		}
	}
	g := newIdx()
	c := indexer.NewConcurrent(g, indexer.ConcurrentConfig{Writers: 3, QueueSize: 16})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	var wg sync.WaitGroup
	for _, s := range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range s {
				if err := c.Apply(&s[i]); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	queries := queriesOf(streams)
	wg.Add(1)
	go func() {
		defer wg.Done()
		var dst indexer.Overlaps
		for range 3 {
			for _, q := range queries {
				dst = c.AppendMatchesIDs(dst[:0], q, kvhash.AppendPrefixIDs(nil, q))
			}
		}
	}()
	wg.Wait()
	if err := c.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for _, q := range queries {
		if a, b := indexertest.FormatOverlaps(seq.FindMatches(q)), indexertest.FormatOverlaps(g.FindMatches(q)); a != b {
			t.Fatalf("match %x: sequential\n%s\nconcurrent\n%s", q, a, b)
		}
	}
	if a, b := indexertest.FormatStats(seq.Stats()), indexertest.FormatStats(g.Stats()); a != b {
		t.Fatalf("stats: sequential %s, concurrent %s", a, b)
	}
	if err := g.Check(); err != nil {
		t.Fatal(err)
	}
	cancel()
	<-done
}

// queriesOf returns the local-hash paths of the streams' stores.
func queriesOf(streams [][]kvevents.Event) [][]uint64 {
	var out [][]uint64
	for _, s := range streams {
		paths := map[uint64][]uint64{}
		for _, ev := range s {
			if ev.Kind != kvevents.KindStored || !ev.Group.IsZero() {
				continue
			}
			var p []uint64
			if ev.HasParent {
				p = append(p, paths[ev.Parent]...)
			}
			for _, b := range ev.Blocks {
				p = append(p, b.Local)
				paths[b.Hash] = append([]uint64(nil), p...)
			}
			out = append(out, p)
		}
	}
	return out
}

// Lookups through the overlay allocate nothing, hybrid workers or not,
// when the caller passes ids and a dst with room.
func TestGroupsAppendNoAlloc(t *testing.T) {
	for _, hybrid := range []bool{false, true} {
		g := indexer.NewGroups(indexer.NewFlash(indexer.FlashConfig{}), indexer.GroupsConfig{})
		var locals []uint64
		var blocks []kvevents.Block
		for i := range uint64(64) {
			locals = append(locals, i+1)
			blocks = append(blocks, kvevents.Block{Hash: 100 + i, Local: i + 1})
		}
		for w := range uint64(8) {
			ev := kvevents.Event{WorkerID: w + 1, Kind: kvevents.KindStored, Blocks: blocks}
			_ = g.Apply(&ev)
			if hybrid && w%2 == 0 {
				ev.Group = kvevents.Group{Index: 1, Kind: kvevents.GroupSliding, Window: 100}
				_ = g.Apply(&ev)
			}
		}
		ids := kvhash.AppendPrefixIDs(nil, locals)
		dst := make(indexer.Overlaps, 0, 16)
		if n := testing.AllocsPerRun(100, func() { dst = g.AppendMatchesIDs(dst[:0], locals, ids) }); n != 0 {
			t.Errorf("hybrid=%v: %v allocs per lookup", hybrid, n)
		}
		if len(dst) != 8 || dst[0].Blocks != 64 {
			t.Errorf("hybrid=%v: %v", hybrid, dst)
		}
	}
}

// FuzzGroups drives the overlay over Flash and over Radix with the same
// bytes-decoded events: identical answers, the joint match never above
// full attention's, invariants held.
func FuzzGroups(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})
	f.Add([]byte("\x10\x21\x32\x43\x54\x65\x76\x87\x98\xa9\xba\xcb\xdc\xed\xfe"))
	f.Fuzz(func(t *testing.T, data []byte) {
		a := indexer.NewGroups(indexer.NewFlash(indexer.FlashConfig{Stride: 2}), indexer.GroupsConfig{BlockSize: 4})
		b := indexer.NewGroups(indexer.NewRadix(indexer.RadixConfig{}), indexer.GroupsConfig{BlockSize: 4})
		groups := []kvevents.Group{{}, {Index: 1, Kind: kvevents.GroupSliding, Window: 6}, {Index: 2, Kind: kvevents.GroupState}}
		for len(data) >= 3 {
			op, x, y := data[0], data[1], data[2]
			data = data[3:]
			ev := kvevents.Event{WorkerID: 1 + uint64(op>>6&1), Group: groups[int(op>>4&3)%3]}
			switch op & 3 {
			case 0, 1:
				ev.Kind = kvevents.KindStored
				if x&8 != 0 {
					ev.HasParent, ev.Parent = true, 1+uint64(x&7)
				}
				for i := range 1 + y&3 {
					h := 1 + uint64(y>>2+byte(i))&15
					ev.Blocks = append(ev.Blocks, kvevents.Block{Hash: h, Local: 1 + h%5})
				}
			case 2:
				ev.Kind = kvevents.KindRemoved
				ev.Hashes = []uint64{1 + uint64(x&15)}
			case 3:
				if x&31 == 0 {
					ev.Kind = kvevents.KindCleared
				} else {
					q := []uint64{}
					for i := range 1 + int(y&7) {
						q = append(q, 1+uint64(x>>byte(i&3)+y)%5)
					}
					ma, mb := a.FindMatches(q), b.FindMatches(q)
					if x, y := indexertest.FormatOverlaps(ma), indexertest.FormatOverlaps(mb); x != y {
						t.Fatalf("match %v: flash %s, radix %s", q, x, y)
					}
					full := a.Inner().FindMatches(q)
					for _, o := range ma {
						if o.Blocks > full.Get(o.Worker) {
							t.Fatalf("joint %d above full %d", o.Blocks, full.Get(o.Worker))
						}
					}
					continue
				}
			}
			ea, eb := a.Apply(&ev), b.Apply(&ev)
			if (ea == nil) != (eb == nil) {
				t.Fatalf("apply %v: flash %v, radix %v", ev, ea, eb)
			}
		}
		if err := errors.Join(a.Check(), b.Check()); err != nil {
			t.Fatal(err)
		}
		if x, y := indexertest.FormatStats(a.Stats()), indexertest.FormatStats(b.Stats()); x != y {
			t.Fatalf("stats: flash %s, radix %s", x, y)
		}
	})
}
