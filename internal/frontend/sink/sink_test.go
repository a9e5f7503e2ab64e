package sink

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/kvrouter/kvrouter/indexer"
	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/ordering"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// sinkLog fakes the sink's router and worker list and records what it
// hears.
type sinkLog struct {
	calls   []string
	dpSizes map[uint64]int
	panics  bool
}

func (l *sinkLog) ApplyEvent(ev *kvevents.Event) error {
	if l.panics {
		panic("index bug")
	}
	l.calls = append(l.calls, fmt.Sprintf("apply %d/%d", ev.WorkerID, ev.DPRank))
	return nil
}

func (l *sinkLog) DPSize(id uint64) (int, bool) {
	n, ok := l.dpSizes[id]
	return n, ok
}

var (
	_ Router = (*sinkLog)(nil)
	_ Ranks  = (*sinkLog)(nil)
)

func newTestSink() (*Sink, *sinkLog) {
	l := &sinkLog{dpSizes: map[uint64]int{1: 2}}
	k := New(Config{Logger: slog.New(slog.DiscardHandler),
		Stored: func(w uint64) { l.calls = append(l.calls, fmt.Sprintf("stored %d", w)) },
		OnEvent: func(w uint64, err error) {
			l.calls = append(l.calls, fmt.Sprintf("OnEvent %d %v", w, err != nil))
		}})
	k.Attach(l, l)
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
		err := k.Apply(&ev)
		if want := ev.WorkerID == 1 && ev.DPRank == 2; errors.Is(err, ErrRank) != want {
			t.Errorf("apply %d/%d = %v, want ErrRank %v", ev.WorkerID, ev.DPRank, err, want)
		}
	}
	if got := strings.Join(l.calls, "; "); got != "apply 1/0; apply 1/1; apply 5/9" {
		t.Errorf("router saw: %s", got)
	}
	if n := testutil.ToFloat64(k.m.rejects.WithLabelValues("dp_rank")); n != 1 {
		t.Errorf("dp_rank rejects = %v, want 1", n)
	}
	l.panics = true
	if err := k.Apply(&kvevents.Event{WorkerID: 1}); !errors.Is(err, ErrApplyPanic) {
		t.Errorf("apply with a panicking router = %v, want ErrApplyPanic", err)
	}
	if n := testutil.ToFloat64(k.m.rejects.WithLabelValues("panic")); n != 1 {
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
	k.Count(2, ordering.FaultGap, 3)
	k.Count(2, ordering.RejectUnknownParent, 0) // nothing
	if got := strings.Join(l.calls, "; "); got != "stored 1; OnEvent 1 false; OnEvent 1 false; OnEvent 2 true" {
		t.Errorf("calls: %s", got)
	}
	if n := testutil.ToFloat64(k.m.applied); n != 2 {
		t.Errorf("events applied = %v, want 2", n)
	}
	if got := k.Counts(2); len(got) != 2 || got[ordering.RejectUnknownParent] != 1 || got[ordering.FaultGap] != 3 {
		t.Errorf("worker 2 counts = %v", got)
	}
	if got := k.Counts(1); got != nil {
		t.Errorf("worker 1 counts = %v, want none", got)
	}
	if n := testutil.ToFloat64(k.m.faults.WithLabelValues(ordering.FaultGap)); n != 3 {
		t.Errorf("gap faults = %v, want 3", n)
	}
	if ix := k.Index(kvevents.TierDevice); ix != nil {
		t.Errorf("index without event-fed indexes = %T, want none", ix)
	}
}
