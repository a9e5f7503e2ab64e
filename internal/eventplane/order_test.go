package eventplane_test

import (
	"fmt"
	. "github.com/kvrouter/kvrouter/internal/eventplane"
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
		stats OrderStats
	}{
		{"in order", nil, []uint64{1, 2, 3}, "1 2 3", OrderStats{}},
		{"duplicates", nil, []uint64{1, 2, 2, 1, 3}, "1 2 3", OrderStats{Duplicates: 2}},
		{"reordered", nil, []uint64{1, 3, 4, 2, 5}, "1 2 3 4 5", OrderStats{Gaps: 1, Recovered: 1}},
		{"dup inside gap", nil, []uint64{1, 3, 3, 2}, "1 2 3", OrderStats{Gaps: 1, Recovered: 1, Duplicates: 1}},
		{"late start is a gap", nil, []uint64{5, 3, 4, 6}, "C2 3 4 5 6", OrderStats{Gaps: 1, Resyncs: 1}},
		{"first id 0", nil, []uint64{0, 1, 2}, "0 1 2", OrderStats{}},
		{"baseline from snapshot", map[kvevents.Worker]uint64{{ID: 1}: 10}, []uint64{9, 10, 11}, "11", OrderStats{Duplicates: 2}},
		{"unrecoverable by size", nil, []uint64{1, 3, 4, 5}, "1 C2 3 4 5", OrderStats{Gaps: 1, Resyncs: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := NewOrder(tc.start)
			o.MaxPending = 2
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
	o := NewOrder(nil)
	o.GapTimeout = time.Second
	var resynced []kvevents.Worker
	o.OnResync = func(w kvevents.Worker) { resynced = append(resynced, w) }
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
