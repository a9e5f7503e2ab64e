package indexertest

import (
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/kvrouter/kvrouter/indexer"
	"github.com/kvrouter/kvrouter/kvevents"
)

// Dir is the directory of the conformance scripts (indexer/testdata/conformance).
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "testdata", "conformance")
}

// RunConformance runs every script in Dir against fresh indexes from
// newIndex (one per script).
func RunConformance(t *testing.T, newIndex func() indexer.Index) {
	t.Helper()
	datadriven.Walk(t, Dir(), func(t *testing.T, path string) {
		h := &Harness{New: newIndex, Index: newIndex()}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			return h.Run(t, d)
		})
	})
}

// Harness runs conformance commands against one index.
type Harness struct {
	New   func() indexer.Index
	Index indexer.Index
	// Inner, when set, makes "init" wrap fresh inner indexes in
	// indexer.Groups (RunGroups).
	Inner func() indexer.Index
}

// Run executes one datadriven command and returns its output.
func (h *Harness) Run(t *testing.T, d *datadriven.TestData) string {
	t.Helper()
	out, err := h.run(d)
	if err != nil {
		d.Fatalf(t, "%v", err)
	}
	if c, ok := h.Index.(interface{ Check() error }); ok {
		if err := c.Check(); err != nil {
			d.Fatalf(t, "invariant check after %q: %v", d.Pos, err)
		}
	}
	return out
}

func (h *Harness) run(d *datadriven.TestData) (string, error) {
	switch d.Cmd {
	case "store":
		ev, err := parseEvent(d, kvevents.KindStored)
		if err != nil {
			return "", err
		}
		return result(h.Index.Apply(ev)), nil
	case "remove":
		ev, err := parseEvent(d, kvevents.KindRemoved)
		if err != nil {
			return "", err
		}
		return result(h.Index.Apply(ev)), nil
	case "clear":
		ev, err := parseEvent(d, kvevents.KindCleared)
		if err != nil {
			return "", err
		}
		return result(h.Index.Apply(ev)), nil
	case "remove-worker":
		id, err := uintArg(d, "worker", 10)
		if err != nil {
			return "", err
		}
		h.Index.RemoveWorker(id)
		return "ok", nil
	case "match":
		locals, err := hexList(d, "locals")
		if err != nil {
			return "", err
		}
		return FormatOverlaps(h.Index.FindMatches(locals)), nil
	case "dump":
		evs := h.Index.Dump()
		if err := CheckRebuild(h.Index, h.New, evs); err != nil {
			return "", err
		}
		return FormatEvents(evs), nil
	case "stats":
		return FormatStats(h.Index.Stats()), nil
	}
	if h.Inner != nil {
		return h.runGroups(d)
	}
	return "", fmt.Errorf("unknown command %q", d.Cmd)
}

// CheckRebuild applies evs to a fresh index and checks that its dump equals
// evs and that it answers every prefix of every dumped chain as idx does.
func CheckRebuild(idx indexer.Index, newIndex func() indexer.Index, evs []kvevents.Event) error {
	fresh := newIndex()
	for i := range evs {
		if evs[i].EventID != 0 || evs[i].Kind != kvevents.KindStored {
			return fmt.Errorf("dump event %d is not a Stored event with id 0: %v", i, evs[i])
		}
		if err := fresh.Apply(&evs[i]); err != nil {
			return fmt.Errorf("replaying dump event %d: %w", i, err)
		}
	}
	if a, b := FormatEvents(evs), FormatEvents(fresh.Dump()); a != b {
		return fmt.Errorf("dump of the rebuilt index differs:\n%s\nvs\n%s", a, b)
	}
	sa, sb := idx.Stats(), fresh.Stats()
	if sa.Blocks != sb.Blocks || sa.Nodes != sb.Nodes || sa.Workers != sb.Workers {
		return fmt.Errorf("rebuilt stats differ: %+v vs %+v", sa, sb)
	}
	for _, q := range dumpQueries(evs) {
		if a, b := FormatOverlaps(idx.FindMatches(q)), FormatOverlaps(fresh.FindMatches(q)); a != b {
			return fmt.Errorf("rebuilt index matches %x as %s, original as %s", q, b, a)
		}
	}
	return nil
}

// dumpQueries returns, per dumped chain, the local-hash path from the root
// to the chain's last block.
func dumpQueries(evs []kvevents.Event) [][]uint64 {
	type key struct {
		w kvevents.Worker
		h uint64
	}
	paths := map[key][]uint64{}
	var out [][]uint64
	for _, ev := range evs {
		var path []uint64
		if ev.HasParent {
			path = slices.Clone(paths[key{ev.Worker(), ev.Parent}])
		}
		for _, b := range ev.Blocks {
			path = append(path, b.Local)
			paths[key{ev.Worker(), b.Hash}] = slices.Clone(path)
		}
		out = append(out, path)
	}
	return out
}

func result(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, indexer.ErrUnknownParent):
		return "rejected: unknown parent"
	case errors.Is(err, indexer.ErrSelfParent):
		return "rejected: self parent"
	case errors.Is(err, indexer.ErrBadEvent):
		return "rejected: bad event"
	}
	return "error: " + err.Error()
}

// FormatOverlaps prints one "w<worker>: <blocks>" line per overlap, or "none".
func FormatOverlaps(o indexer.Overlaps) string {
	if len(o) == 0 {
		return "none"
	}
	var b strings.Builder
	for i, x := range o {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "w%s: %d", x.Worker, x.Blocks)
	}
	return b.String()
}

// FormatEvents prints events one a line with hexadecimal hashes.
func FormatEvents(evs []kvevents.Event) string {
	if len(evs) == 0 {
		return "empty"
	}
	var b strings.Builder
	for i, ev := range evs {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "w%s %s", ev.Worker(), ev.Kind)
		switch ev.Kind {
		case kvevents.KindStored:
			if ev.HasParent {
				fmt.Fprintf(&b, " parent=%x", ev.Parent)
			} else {
				b.WriteString(" parent=-")
			}
			b.WriteString(" blocks=(")
			for j, x := range ev.Blocks {
				if j > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, "%x:%x", x.Hash, x.Local)
			}
			b.WriteByte(')')
		case kvevents.KindRemoved:
			fmt.Fprintf(&b, " hashes=%x", ev.Hashes)
		}
		if !ev.Group.IsZero() {
			fmt.Fprintf(&b, " group=%s", ev.Group)
		}
	}
	return b.String()
}

// FormatStats prints the implementation-independent fields of s.
func FormatStats(s indexer.Stats) string {
	out := fmt.Sprintf("blocks=%d nodes=%d workers=%d applied=%d rejected=%d unknown-remove=%d",
		s.Blocks, s.Nodes, s.Workers, s.Applied, s.Rejected, s.UnknownRemove)
	if g := s.Groups; g != nil {
		out += fmt.Sprintf("\ngroups: workers=%d sliding=%d state=%d pending=%d parked=%d dropped=%d",
			g.Workers, g.SlidingBlocks, g.StateBlocks, g.Pending, g.Parked, g.Dropped)
	}
	return out
}

func parseEvent(d *datadriven.TestData, kind kvevents.Kind) (*kvevents.Event, error) {
	id, err := uintArg(d, "worker", 10)
	if err != nil {
		return nil, err
	}
	ev := &kvevents.Event{WorkerID: id, Kind: kind}
	if arg, ok := d.Arg("group"); ok && len(arg.Vals) == 1 {
		g, err := ParseGroup(arg.Vals[0])
		if err != nil {
			return nil, err
		}
		ev.Group = g
	}
	if d.HasArg("rank") {
		r, err := uintArg(d, "rank", 10)
		if err != nil {
			return nil, err
		}
		ev.DPRank = uint32(r)
	}
	switch kind {
	case kvevents.KindStored:
		if arg, ok := d.Arg("parent"); ok && len(arg.Vals) == 1 {
			if p := arg.Vals[0]; p != "-" {
				v, err := strconv.ParseUint(p, 16, 64)
				if err != nil {
					return nil, fmt.Errorf("parent: %w", err)
				}
				ev.HasParent, ev.Parent = true, v
			}
		}
		arg, ok := d.Arg("blocks")
		if !ok {
			return nil, errors.New("store needs blocks=(E:L,...)")
		}
		for _, v := range arg.Vals {
			if v == "" {
				continue
			}
			e, l, ok := strings.Cut(v, ":")
			if !ok {
				return nil, fmt.Errorf("block %q is not E:L", v)
			}
			eh, err1 := strconv.ParseUint(e, 16, 64)
			lh, err2 := strconv.ParseUint(l, 16, 64)
			if err := errors.Join(err1, err2); err != nil {
				return nil, fmt.Errorf("block %q: %w", v, err)
			}
			ev.Blocks = append(ev.Blocks, kvevents.Block{Hash: eh, Local: lh})
		}
	case kvevents.KindRemoved:
		hs, err := hexList(d, "hashes")
		if err != nil {
			return nil, err
		}
		ev.Hashes = hs
	}
	return ev, nil
}

func uintArg(d *datadriven.TestData, key string, base int) (uint64, error) {
	arg, ok := d.Arg(key)
	if !ok || len(arg.Vals) != 1 {
		return 0, fmt.Errorf("missing %s=", key)
	}
	v, err := strconv.ParseUint(arg.Vals[0], base, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", key, err)
	}
	return v, nil
}

func hexList(d *datadriven.TestData, key string) ([]uint64, error) {
	arg, ok := d.Arg(key)
	if !ok {
		return nil, fmt.Errorf("missing %s=(...)", key)
	}
	var out []uint64
	for _, v := range arg.Vals {
		if v == "" {
			continue
		}
		x, err := strconv.ParseUint(v, 16, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		out = append(out, x)
	}
	return out, nil
}
