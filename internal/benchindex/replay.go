package benchindex

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/kvrouter/kvrouter/internal/cputime"
	"github.com/kvrouter/kvrouter/kvevents"
)

// Target is an index under test, as a replay drives it. One Target serves
// one replay; a TargetFactory makes a fresh, empty one per run.
type Target interface {
	// Start launches the target's writer goroutines; they stop when ctx
	// is done or Finish is called. readers is the number of goroutines
	// that will call Lookup, with reader ids in [0, readers).
	Start(ctx context.Context, readers int) error
	// Submit hands one event to the writer pinned to its worker and may
	// return before the event is applied. Events of one worker are
	// submitted by one goroutine, in event-id order.
	Submit(ev *kvevents.Event) error
	// Lookup runs one query inline on the calling goroutine, reader r
	// (targets may keep per-reader scratch space). q is the
	// lookup's index in Stream.Lookups (a target may keep per-query keys
	// of its own, prepared before the replay). The result is opaque (a
	// match depth); it keeps the work observable.
	Lookup(r, q int, locals []uint64) int
	// Queued returns how many submitted events are not applied yet.
	Queued() int64
	// Finish waits for every submitted event to be applied, stops the
	// writers and returns the final state of the index.
	Finish(ctx context.Context) (Final, error)
}

// Drainer is implemented by targets that can wait for every submitted
// event to be applied without stopping (so the drain time excludes
// Finish's teardown and statistics).
type Drainer interface {
	Drain(ctx context.Context) error
}

// TargetFactory makes a fresh, empty Target.
type TargetFactory struct {
	Name string
	New  func() (Target, error)
}

// Final is the state of a target after a replay, once drained.
type Final struct {
	Blocks   int   // (worker, block) pairs held
	Bytes    int64 // approximate bytes in use; 0 when unknown
	Applied  uint64
	Rejected uint64 // events the index refused (should be 0 on a mocker stream)
	// SafeStarted and SafeRedone: index lookups that ran in safe mode
	// (indexer.Stats; 0 for indexes without one).
	SafeStarted, SafeRedone uint64
}

// ReplayOptions shape one replay.
type ReplayOptions struct {
	// Window is the wall time the whole timeline is compressed into. Zero
	// means unpaced: every entry is due at once and readers go as fast as
	// they can (the limit of a sweep).
	Window time.Duration
	// Readers is the number of reader goroutines; worker w is owned by
	// reader w % Readers. Zero means GOMAXPROCS.
	Readers int
	// Progress, when set, is called now and then with the number of
	// entries replayed since the last call. It must be safe for
	// concurrent use.
	Progress func(n int)
	// ThreadCPU also times each lookup's thread CPU and counts the times
	// its thread was switched off the CPU meanwhile (internal/cputime;
	// readers are locked to their OS threads), so that a wall-clock tail
	// can be split into work and time descheduled. It costs four system
	// calls per lookup (1.7-3.5 µs each on the 2-core test VM), outside
	// the wall-clock bracket but on the reader's time, so searches use it
	// only where latency is the point. False (the default): wall clock
	// only; also false where cputime is unsupported.
	ThreadCPU bool
}

// Sample is what one replay measured, before it is turned into a Result.
type Sample struct {
	Window  time.Duration
	Wall    time.Duration // first entry released to last entry issued
	Drained time.Duration // first entry released to every event applied (Drain, else Finish)
	Queued  int64         // events still queued when the wall clock stopped
	Lookups *hdrhistogram.Histogram
	// LookupsCPU holds each lookup's thread CPU time (ReplayOptions.
	// ThreadCPU; nil otherwise). It includes part of the two clock reads
	// around it: CPUBaseline is the median of an empty bracket, measured
	// on a reader before the replay.
	LookupsCPU  *hdrhistogram.Histogram
	CPUBaseline time.Duration
	// Quiet holds the wall and CPU times of the lookups their thread ran
	// without being switched off its CPU (cputime.ThreadSwitches
	// unchanged), and Switched counts the others (ThreadCPU only).
	QuietWall, QuietCPU *hdrhistogram.Histogram
	Switched            int64
	MatchSum            int64 // sum of Lookup results
	Final               Final
}

// latency histogram range: 1 ns to 10 s, 3 significant figures.
const (
	histMin = 1
	histMax = int64(10 * time.Second)
	histSig = 3
)

// readerEntry is a timeline entry with its wall due time precomputed.
type readerEntry struct {
	due   int64 // ns after start
	kind  OpKind
	index int32
}

// Replay runs one replay of tl against a fresh target from f.
func Replay(ctx context.Context, tl *Timeline, f TargetFactory, opt ReplayOptions) (Sample, error) {
	readers := opt.Readers
	if readers <= 0 {
		readers = runtime.GOMAXPROCS(0)
	}
	plans := planReaders(tl, readers, opt.Window)

	tgt, err := f.New()
	if err != nil {
		return Sample{}, fmt.Errorf("benchindex: new %s: %w", f.Name, err)
	}
	// Start from a collected heap, so that garbage of earlier runs (or of
	// building the target) is not collected on this run's clock.
	runtime.GC()
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := tgt.Start(runCtx, readers); err != nil {
		return Sample{}, fmt.Errorf("benchindex: start %s: %w", f.Name, err)
	}

	type out struct {
		h    *hdrhistogram.Histogram
		cpu  *cpuRec
		base time.Duration
		sum  int64
		err  error
	}
	outs := make([]out, readers)
	threadCPU := opt.ThreadCPU && cputime.Supported
	var wg sync.WaitGroup
	gate := make(chan struct{})
	var start time.Time
	var stop atomic.Bool
	for r := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o := &outs[r]
			o.h = hdrhistogram.New(histMin, histMax, histSig)
			if threadCPU {
				// The thread clock measures this goroutine only while
				// it stays on one thread.
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				o.cpu = newCPURec()
				o.base = emptyBracketCPU()
			}
			<-gate
			o.sum, o.err = runReader(r, tl.Stream, plans[r], tgt, start, o.h, o.cpu, opt.Progress, &stop)
			if o.err != nil {
				stop.Store(true)
			}
		}()
	}
	// Watch ctx without touching the hot path: a cancelled context makes
	// readers stop at their next progress check.
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			stop.Store(true)
		case <-done:
		}
	}()
	start = time.Now()
	close(gate)
	wg.Wait()
	wall := time.Since(start)
	queued := tgt.Queued()
	close(done)

	s := Sample{Window: opt.Window, Wall: wall, Queued: queued, Lookups: hdrhistogram.New(histMin, histMax, histSig)}
	var errs []error
	if threadCPU {
		all := newCPURec()
		for _, o := range outs {
			all.merge(o.cpu)
		}
		s.LookupsCPU, s.QuietWall, s.QuietCPU, s.Switched = all.cpu, all.quietWall, all.quietCPU, all.switched
		s.CPUBaseline = outs[0].base
	}
	for _, o := range outs {
		s.Lookups.Merge(o.h)
		s.MatchSum += o.sum
		if o.err != nil {
			errs = append(errs, o.err)
		}
	}
	if err := ctx.Err(); err != nil {
		errs = append(errs, err)
	}
	if d, ok := tgt.(Drainer); ok {
		if err := d.Drain(ctx); err != nil {
			errs = append(errs, fmt.Errorf("benchindex: drain %s: %w", f.Name, err))
		}
		s.Drained = time.Since(start)
	}
	final, ferr := tgt.Finish(ctx)
	if s.Drained == 0 {
		s.Drained = time.Since(start)
	}
	if ferr != nil {
		errs = append(errs, fmt.Errorf("benchindex: finish %s: %w", f.Name, ferr))
	}
	s.Final = final
	return s, errors.Join(errs...)
}

// planReaders splits the timeline by owning reader and precomputes each
// entry's wall due time: source time t maps to t*window/span.
func planReaders(tl *Timeline, readers int, window time.Duration) [][]readerEntry {
	plans := make([][]readerEntry, readers)
	for _, e := range tl.Entries {
		r := int(e.Worker) % readers
		var due int64
		if window > 0 && tl.Span > 0 {
			due = int64(float64(e.At) * float64(window) / float64(tl.Span))
		}
		plans[r] = append(plans[r], readerEntry{due: due, kind: e.Kind, index: e.Index})
	}
	return plans
}

// progressEvery is how many entries a reader replays between progress
// reports and stop checks.
const progressEvery = 4096

// runReader replays one reader's plan. It waits for each entry's due time
// (sleeping when well ahead, yielding when close), times lookups with the
// monotonic clock (and the thread CPU clock into cpu when it is not nil)
// and submits events.
func runReader(r int, s *Stream, plan []readerEntry, tgt Target, start time.Time, h *hdrhistogram.Histogram, cpu *cpuRec,
	progress func(int), stop *atomic.Bool) (sum int64, err error) {
	var now int64 // ns since start, refreshed only when an entry is not yet known to be due
	pending := 0
	for i := range plan {
		e := &plan[i]
		if e.due > now {
			now = int64(time.Since(start))
			for e.due > now {
				if gap := e.due - now; gap > int64(200*time.Microsecond) {
					time.Sleep(time.Duration(gap - int64(100*time.Microsecond)))
				} else {
					runtime.Gosched()
				}
				now = int64(time.Since(start))
			}
		}
		switch e.kind {
		case OpLookup:
			l := &s.Lookups[e.index]
			var c0 time.Duration
			var n0 int64
			if cpu != nil {
				n0, _ = cputime.ThreadSwitches()
				c0, _ = cputime.Thread()
			}
			t0 := time.Now()
			sum += int64(tgt.Lookup(r, int(e.index), l.Locals))
			t1 := time.Now()
			d := int64(t1.Sub(t0))
			if cpu != nil {
				c1, _ := cputime.Thread()
				n1, _ := cputime.ThreadSwitches()
				cpu.record(d, int64(c1-c0), n1 != n0)
			}
			_ = h.RecordValue(max(d, histMin))
			now = int64(t1.Sub(start))
		case OpEvent:
			if err := tgt.Submit(&s.Events[e.index].Event); err != nil {
				return sum, fmt.Errorf("benchindex: submit event %d: %w", e.index, err)
			}
		}
		pending++
		if pending == progressEvery {
			if progress != nil {
				progress(pending)
			}
			pending = 0
			if stop.Load() {
				return sum, nil
			}
		}
	}
	if progress != nil && pending > 0 {
		progress(pending)
	}
	return sum, nil
}

// emptyBracketCPU returns the median thread CPU time of an empty bracket
// (two clock reads around two monotonic-clock reads, as runReader does):
// the clock's own share of every lookup's CPU figure.
func emptyBracketCPU() time.Duration {
	var ds [255]time.Duration
	for i := range ds {
		c0, _ := cputime.Thread()
		_ = time.Now()
		_ = time.Now()
		c1, _ := cputime.Thread()
		ds[i] = c1 - c0
	}
	slices.Sort(ds[:])
	return ds[len(ds)/2]
}

// cpuRec is one reader's thread-CPU record (ReplayOptions.ThreadCPU).
type cpuRec struct {
	cpu, quietWall, quietCPU *hdrhistogram.Histogram
	switched                 int64
}

func newCPURec() *cpuRec {
	return &cpuRec{cpu: hdrhistogram.New(histMin, histMax, histSig),
		quietWall: hdrhistogram.New(histMin, histMax, histSig), quietCPU: hdrhistogram.New(histMin, histMax, histSig)}
}

// record adds one lookup: wall and CPU nanoseconds, and whether its thread
// was switched off the CPU meanwhile.
func (c *cpuRec) record(wall, cpu int64, switched bool) {
	_ = c.cpu.RecordValue(max(cpu, histMin))
	if switched {
		c.switched++
		return
	}
	_ = c.quietWall.RecordValue(max(wall, histMin))
	_ = c.quietCPU.RecordValue(max(cpu, histMin))
}

func (c *cpuRec) merge(o *cpuRec) {
	c.cpu.Merge(o.cpu)
	c.quietWall.Merge(o.quietWall)
	c.quietCPU.Merge(o.quietCPU)
	c.switched += o.switched
}
