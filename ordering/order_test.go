package ordering_test

import (
	"fmt"
	. "github.com/kvrouter/kvrouter/ordering"
	"strings"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/kvevents"
)

func ids(evs []kvevents.Event) string {
	var b strings.Builder
	for _, e := range evs {
		if e.Kind == kvevents.KindCleared {
			fmt.Fprintf(&b, "C%d ", e.EventID)
		} else {
			fmt.Fprintf(&b, "%d ", e.EventID)
		}
	}
	return strings.TrimSpace(b.String())
}

func TestOrder(t *testing.T) {
	t0 := time.Unix(100, 0)
	ev := func(id uint64) *kvevents.Event {
		return &kvevents.Event{WorkerID: 1, EventID: id, Kind: kvevents.KindStored}
	}
	for _, tc := range []struct {
		name  string
		start map[kvevents.Worker]uint64
		in    []uint64
		want  string
		stats Stats
	}{
		{"in order", nil, []uint64{1, 2, 3}, "1 2 3", Stats{}},
		{"duplicates", nil, []uint64{1, 2, 2, 1, 3}, "1 2 3", Stats{Duplicates: 2}},
		{"reordered", nil, []uint64{1, 3, 4, 2, 5}, "1 2 3 4 5", Stats{Gaps: 1, Recovered: 1}},
		{"dup inside gap", nil, []uint64{1, 3, 3, 2}, "1 2 3", Stats{Gaps: 1, Recovered: 1, Duplicates: 1}},
		{"late start is a gap", nil, []uint64{5, 3, 4, 6}, "C2 3 4 5 6", Stats{Gaps: 1, Resyncs: 1}},
		{"first id 0", nil, []uint64{0, 1, 2}, "0 1 2", Stats{}},
		{"baseline from snapshot", map[kvevents.Worker]uint64{{ID: 1}: 10}, []uint64{9, 10, 11}, "11", Stats{Duplicates: 2}},
		{"unrecoverable by size", nil, []uint64{1, 3, 4, 5}, "1 C2 3 4 5", Stats{Gaps: 1, Resyncs: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := New(Config{MaxPending: 2}, tc.start)
			var out []kvevents.Event
			for _, id := range tc.in {
				out = o.Offer(out, ev(id), t0)
			}
			if got := ids(out); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
			if got := o.Stats(); got != tc.stats {
				t.Fatalf("stats %+v, want %+v", got, tc.stats)
			}
		})
	}
}

func TestOrderExpire(t *testing.T) {
	t0 := time.Unix(100, 0)
	var resynced []kvevents.Worker
	o := New(Config{GapTimeout: time.Second, OnClear: func(w kvevents.Worker, r Reason) {
		if r == ReasonGap {
			resynced = append(resynced, w)
		}
	}}, nil)
	out := o.Offer(nil, &kvevents.Event{WorkerID: 2, EventID: 1}, t0)
	out = o.Offer(out, &kvevents.Event{WorkerID: 2, EventID: 4}, t0)
	if got := ids(o.Expire(nil, t0.Add(999*time.Millisecond))); got != "" {
		t.Fatalf("expired early: %q", got)
	}
	out = o.Expire(out, t0.Add(time.Second))
	if got := ids(out); got != "1 C3 4" {
		t.Fatalf("got %q", got)
	}
	if len(resynced) != 1 || resynced[0] != (kvevents.Worker{ID: 2}) {
		t.Fatalf("resynced %v", resynced)
	}
	// After the resync, order continues from 4.
	if got := ids(o.Offer(nil, &kvevents.Event{WorkerID: 2, EventID: 5}, t0)); got != "5" {
		t.Fatalf("got %q", got)
	}
	o.Forget(2)
	if got := ids(o.Offer(nil, &kvevents.Event{WorkerID: 2, EventID: 1}, t0)); got != "1" {
		t.Fatalf("after forget got %q", got)
	}
}

// A publisher that starts over is detected whether its new ids are below,
// equal to or far above the last applied, and only its worker+rank is
// cleared.
func TestOrderRestart(t *testing.T) {
	t0 := time.Unix(100, 0)
	st := func(w, id uint64) *kvevents.Event {
		return &kvevents.Event{WorkerID: w, EventID: id, Kind: kvevents.KindStored}
	}
	cl := func(w, id uint64) *kvevents.Event {
		return &kvevents.Event{WorkerID: w, EventID: id, Kind: kvevents.KindCleared}
	}
	for _, tc := range []struct {
		name string
		in   []*kvevents.Event
		want string
		st   Stats
	}{
		// vLLM numbers from 0 and starts with AllBlocksCleared.
		{"cleared at 0 below last", []*kvevents.Event{st(1, 1), st(1, 2), st(1, 3), cl(1, 0), st(1, 1)}, "1 2 3 C0 1", Stats{Restarts: 1}},
		// Restart after exactly one event: the new first id equals the last.
		{"cleared at 1 equal to last", []*kvevents.Event{st(1, 1), cl(1, 1), st(1, 2)}, "1 C1 2", Stats{Restarts: 1}},
		{"far below", []*kvevents.Event{st(1, 1), st(1, 2_000_002), st(1, 5)}, "1 C2000001 2000002 C4 5", Stats{Restarts: 2}},
		// A hostile 10^12 costs one clear; the real ids that follow reset
		// the baseline back instead of being swallowed as duplicates.
		{"far above then real ids", []*kvevents.Event{st(1, 1), st(1, 2), st(1, 1e12), st(1, 3), st(1, 4)}, "1 2 C999999999999 1000000000000 C2 3 4", Stats{Restarts: 2}},
		{"first id far above", []*kvevents.Event{st(1, 5_000_000), st(1, 5_000_001)}, "C4999999 5000000 5000001", Stats{Restarts: 1}},
		// A Stored at 1 below the last is a redelivery, not a restart.
		{"stored at 1 is a duplicate", []*kvevents.Event{st(1, 1), st(1, 2), st(1, 1)}, "1 2", Stats{Duplicates: 1}},
		// Another worker's stream is untouched.
		{"other worker kept", []*kvevents.Event{st(1, 1), st(2, 1), st(2, 2), cl(1, 0), st(2, 3)}, "1 1 2 C0 3", Stats{Restarts: 1}},
		// The old publisher's buffered events are dropped with it.
		{"pending dropped", []*kvevents.Event{st(1, 1), st(1, 2), st(1, 4), cl(1, 0), st(1, 1)}, "1 2 C0 1", Stats{Gaps: 1, Restarts: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cleared []string
			o := New(Config{MaxJump: 1_000_000, OnClear: func(w kvevents.Worker, r Reason) {
				cleared = append(cleared, w.String()+":"+r.String())
			}}, nil)
			var out []kvevents.Event
			for _, ev := range tc.in {
				out = o.Offer(out, ev, t0)
			}
			if got := ids(out); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
			if got := o.Stats(); got != tc.st {
				t.Fatalf("stats %+v, want %+v", got, tc.st)
			}
			if len(cleared) != int(tc.st.Restarts) {
				t.Fatalf("OnClear calls %v, want %d", cleared, tc.st.Restarts)
			}
			for _, c := range cleared {
				if c != "1:restart" {
					t.Fatalf("cleared %v, want only worker 1 for a restart", cleared)
				}
			}
		})
	}
}

func TestSeq(t *testing.T) {
	for _, tc := range []struct {
		name string
		seqs []int64
		want string
	}{
		{"in order from 0", []int64{0, 1, 2}, "first next next"},
		{"gap", []int64{5, 8, 9}, "first gap next"},
		{"restart below", []int64{5, 6, 0, 1}, "first next restart next"},
		// vLLM restarted after one message: seq 0 again.
		{"restart equal after one", []int64{0, 0, 1}, "first restart next"},
		{"restart far above", []int64{3, 3 + 2_000_000, 4}, "first restart restart"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Seq{MaxJump: 1_000_000}
			var got []string
			for _, q := range tc.seqs {
				got = append(got, s.Classify(q).String())
			}
			if g := strings.Join(got, " "); g != tc.want {
				t.Fatalf("got %q, want %q", g, tc.want)
			}
		})
	}
}
