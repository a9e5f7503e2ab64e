package frontend

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/kvrouter/kvrouter/indexer"
	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/ordering"
	"github.com/kvrouter/kvrouter/router"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// sinkLog fakes the sink's router and worker list and records what it
// hears.
type sinkLog struct {
	calls   []string
	workers map[uint64]*Worker
	panics  bool
}

func (l *sinkLog) ApplyEvent(ev *kvevents.Event) error {
	if l.panics {
		panic("index bug")
	}
	l.calls = append(l.calls, fmt.Sprintf("apply %d/%d", ev.WorkerID, ev.DPRank))
	return nil
}

func (l *sinkLog) get(id uint64) (*Worker, bool) {
	w, ok := l.workers[id]
	return w, ok
}

var (
	_ eventRouter  = (*sinkLog)(nil)
	_ workerLookup = (*sinkLog)(nil)
)

func newTestSink() (*sink, *sinkLog) {
	l := &sinkLog{workers: map[uint64]*Worker{1: {ID: 1, Info: router.WorkerInfo{DPSize: 2}}}}
	k := &sink{log: slog.New(slog.DiscardHandler), m: testMetrics(), rt: l, ranks: l,
		stored: func(w uint64) { l.calls = append(l.calls, fmt.Sprintf("stored %d", w)) },
		onEvent: func(w uint64, err error) {
			l.calls = append(l.calls, fmt.Sprintf("OnEvent %d %v", w, err != nil))
		}}
	return k, l
}

// TestSinkApply: the sink refuses a registered worker's events of ranks
// beyond its dp size before the router sees them, lets unregistered
// workers' events through, and turns a panic below it into an error.
func TestSinkApply(t *testing.T) {
	k, l := newTestSink()
	for _, ev := range []kvevents.Event{
		{WorkerID: 1, DPRank: 0}, {WorkerID: 1, DPRank: 1}, {WorkerID: 1, DPRank: 2}, {WorkerID: 5, DPRank: 9},
	} {
		err := k.apply(&ev)
		if want := ev.WorkerID == 1 && ev.DPRank == 2; errors.Is(err, ErrRank) != want {
			t.Errorf("apply %d/%d = %v, want ErrRank %v", ev.WorkerID, ev.DPRank, err, want)
		}
	}
	if got := strings.Join(l.calls, "; "); got != "apply 1/0; apply 1/1; apply 5/9" {
		t.Errorf("router saw: %s", got)
	}
	if n := testutil.ToFloat64(k.m.eventRejects.WithLabelValues("dp_rank")); n != 1 {
		t.Errorf("dp_rank rejects = %v, want 1", n)
	}
	l.panics = true
	if err := k.apply(&kvevents.Event{WorkerID: 1}); !errors.Is(err, ErrApplyPanic) {
		t.Errorf("apply with a panicking router = %v, want ErrApplyPanic", err)
	}
	if n := testutil.ToFloat64(k.m.eventRejects.WithLabelValues("panic")); n != 1 {
		t.Errorf("panic rejects = %v, want 1", n)
	}
}

// TestSinkOutcomes: what the index writers report, and what the event
// plane counts, lands in the metrics, the per-worker counts and the
// callbacks.
func TestSinkOutcomes(t *testing.T) {
	k, l := newTestSink()
	k.event(&kvevents.Event{WorkerID: 1, Kind: kvevents.KindStored}, nil)
	k.event(&kvevents.Event{WorkerID: 1, Kind: kvevents.KindRemoved}, nil)
	k.event(&kvevents.Event{WorkerID: 2, Kind: kvevents.KindStored}, indexer.ErrUnknownParent)
	k.count(2, ordering.FaultGap, 3)
	k.count(2, ordering.RejectUnknownParent, 0) // nothing
	if got := strings.Join(l.calls, "; "); got != "stored 1; OnEvent 1 false; OnEvent 1 false; OnEvent 2 true" {
		t.Errorf("calls: %s", got)
	}
	if n := testutil.ToFloat64(k.m.events); n != 2 {
		t.Errorf("events applied = %v, want 2", n)
	}
	if got := k.counts.of(2); len(got) != 2 || got[ordering.RejectUnknownParent] != 1 || got[ordering.FaultGap] != 3 {
		t.Errorf("worker 2 counts = %v", got)
	}
	if got := k.counts.of(1); got != nil {
		t.Errorf("worker 1 counts = %v, want none", got)
	}
	if n := testutil.ToFloat64(k.m.eventFaults.WithLabelValues(ordering.FaultGap)); n != 3 {
		t.Errorf("gap faults = %v, want 3", n)
	}
	if k.kind() != "" {
		t.Errorf("kind without event-fed indexes = %q, want none", k.kind())
	}
}
