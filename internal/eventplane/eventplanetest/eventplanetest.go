package eventplanetest

import (
	"context"
	"io"
	"log/slog"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/internal/eventplane"
	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/zeebo/xxh3"
)

// Quiet is a logger that discards everything.
var Quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// Embedded starts an embedded NATS with a temp store dir (removed at the
// end of the test); its client is in-process (the default), and survives a
// Restart like a TCP one.
func Embedded(t testing.TB) *eventplane.Conn {
	t.Helper()
	return EmbeddedWith(t, func(*eventplane.Config) {})
}

// EmbeddedWith is Embedded with the configuration adjusted by edit (e.g.
// LoopbackTCP).
func EmbeddedWith(t testing.TB, edit func(*eventplane.Config)) *eventplane.Conn {
	t.Helper()
	cfg := eventplane.DefaultConfig()
	cfg.StoreDir = t.TempDir()
	cfg.Logger = Quiet
	edit(&cfg)
	c, err := eventplane.StartEmbedded(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// WaitFor polls cond every few milliseconds until it holds or d passes.
func WaitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			t.Fatalf("timed out after %v waiting for %s", d, what)
		case <-tick.C:
		}
	}
}

// DumpHash is a hash of an index dump made canonical (events sorted by
// their JSON form, event ids zeroed).
func DumpHash(evs []kvevents.Event) uint64 {
	lines := make([]string, len(evs))
	for i := range evs {
		e := evs[i]
		e.EventID = 0
		lines[i] = string(kvevents.AppendJSON(nil, &e))
	}
	sort.Strings(lines)
	h := xxh3.New()
	for _, l := range lines {
		_, _ = h.WriteString(l)
		_, _ = h.WriteString("\n")
	}
	return h.Sum64()
}

// Gen generates random, mostly valid KV events for a few workers, with
// dense event ids per worker+rank.
type Gen struct {
	rng     *rand.Rand
	workers []kvevents.Worker
	held    map[kvevents.Worker][]uint64
	next    map[kvevents.Worker]uint64
	hash    uint64
}

// NewGen returns a generator over workers 1..n with ranks 0..ranks-1.
func NewGen(seed uint64, n, ranks int) *Gen {
	g := &Gen{rng: rand.New(rand.NewPCG(seed, 7)), held: map[kvevents.Worker][]uint64{}, next: map[kvevents.Worker]uint64{}}
	for i := 1; i <= n; i++ {
		for r := 0; r < ranks; r++ {
			g.workers = append(g.workers, kvevents.Worker{ID: uint64(i), Rank: uint32(r)})
		}
	}
	return g
}

// Next returns the next event.
func (g *Gen) Next() kvevents.Event {
	w := g.workers[g.rng.IntN(len(g.workers))]
	g.next[w]++
	ev := kvevents.Event{WorkerID: w.ID, DPRank: w.Rank, EventID: g.next[w]}
	held := g.held[w]
	switch p := g.rng.IntN(100); {
	case p < 70 || len(held) == 0:
		ev.Kind = kvevents.KindStored
		if len(held) > 0 && g.rng.IntN(3) > 0 {
			ev.HasParent, ev.Parent = true, held[g.rng.IntN(len(held))]
		}
		n := 1 + g.rng.IntN(8)
		for i := 0; i < n; i++ {
			g.hash++
			h := g.hash<<8 | uint64(w.ID)
			// Locals repeat across workers so prefixes are shared.
			ev.Blocks = append(ev.Blocks, kvevents.Block{Hash: h, Local: uint64(g.rng.IntN(64))})
			held = append(held, h)
		}
	case p < 97:
		ev.Kind = kvevents.KindRemoved
		n := 1 + g.rng.IntN(3)
		for i := 0; i < n && len(held) > 0; i++ {
			j := g.rng.IntN(len(held))
			ev.Hashes = append(ev.Hashes, held[j])
			held[j] = held[len(held)-1]
			held = held[:len(held)-1]
		}
	default:
		ev.Kind = kvevents.KindCleared
		held = nil
	}
	g.held[w] = held
	return ev
}

// Trees generates stored events that grow one tree of fresh blocks per
// worker+rank: an event hangs off a block its worker+rank stored before
// (3 times in 4) or starts at the root. Event ids are dense per
// worker+rank; Last holds the last one given.
type Trees struct {
	rng  *rand.Rand
	hash uint64
	Last map[kvevents.Worker]uint64
	tip  map[kvevents.Worker][]uint64 // blocks a new event may hang off
}

// NewTrees returns a generator drawing from rng.
func NewTrees(rng *rand.Rand) *Trees {
	return &Trees{rng: rng, Last: map[kvevents.Worker]uint64{}, tip: map[kvevents.Worker][]uint64{}}
}

// Next returns w's next event, storing n fresh blocks.
func (g *Trees) Next(w kvevents.Worker, n int) kvevents.Event {
	g.Last[w]++
	ev := kvevents.Event{WorkerID: w.ID, DPRank: w.Rank, EventID: g.Last[w], Kind: kvevents.KindStored}
	if t := g.tip[w]; len(t) > 0 && g.rng.IntN(4) > 0 {
		ev.HasParent, ev.Parent = true, t[g.rng.IntN(len(t))]
	}
	for range n {
		g.hash++
		ev.Blocks = append(ev.Blocks, kvevents.Block{Hash: g.hash, Local: g.rng.Uint64()})
	}
	g.tip[w] = append(g.tip[w], g.hash)
	return ev
}
