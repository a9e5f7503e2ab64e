package benchindex

import (
	"context"
	"fmt"

	"github.com/kvrouter/kvrouter/kvevents"
)

// Preloader is implemented by targets that can apply events synchronously,
// on the caller's goroutine, before Start (to build an index state that a
// lookup-only replay then queries).
type Preloader interface {
	Preload(ev *kvevents.Event) error
}

// EventsOnly returns a stream with s's events and no lookups (shared
// backing arrays; do not modify).
func (s *Stream) EventsOnly() *Stream { return &Stream{Workers: s.Workers, Events: s.Events} }

// LookupsOnly returns a stream with s's lookups and no events.
func (s *Stream) LookupsOnly() *Stream { return &Stream{Workers: s.Workers, Lookups: s.Lookups} }

// WithPreload returns a factory whose targets first apply evs, in order,
// through Preload. The target must implement Preloader.
func WithPreload(f TargetFactory, evs []TimedEvent) TargetFactory {
	return withPreload(context.Background(), f, evs, nil)
}

// withPreload is WithPreload that stops when ctx is done and reports
// progress (every 4096 events) when progress is set.
func withPreload(ctx context.Context, f TargetFactory, evs []TimedEvent, progress func(int)) TargetFactory {
	return TargetFactory{Name: f.Name, New: func() (Target, error) {
		t, err := f.New()
		if err != nil {
			return nil, err
		}
		p, ok := t.(Preloader)
		if !ok {
			return nil, fmt.Errorf("benchindex: target %s cannot preload", f.Name)
		}
		for i := range evs {
			if i%4096 == 0 && i > 0 {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				if progress != nil {
					progress(4096)
				}
			}
			if err := p.Preload(&evs[i].Event); err != nil {
				return nil, fmt.Errorf("benchindex: preload %s event %d: %w", f.Name, i, err)
			}
		}
		return t, nil
	}}
}

// Preload implements Preloader: the event is applied directly to the
// wrapped index. A rejection is counted in the index's stats, not returned.
func (t *IndexTarget) Preload(ev *kvevents.Event) error {
	_ = t.inner.Apply(ev)
	return nil
}

// IdleLookups replays tl's lookups alone, unpaced on one reader, against a
// target from f preloaded with every event of tl: the lookup latency with
// no writers (Config.IdleLookups). The index holds the stream's final
// state, not each lookup's own moment, so matches differ from the mixed
// replay's; the latency is the figure. progress, when set, counts the
// preloaded events.
//
// wall times the lookups by the monotonic clock alone. With threadCPU the
// same lookups are then replayed a second time on the same index, timing
// each one's thread CPU too (ReplayOptions.ThreadCPU), into cpu; without,
// cpu is the zero Result. The passes are separate because the CPU bracket
// is four system calls per lookup, and on a kernel with page-table
// isolation and no PCID (the 2-core test VM: meltdown "Mitigation: PTI",
// no pcid flag) each one flushes the TLB, so every lookup would start
// with no page translation cached: measured on the conversation trace
// (64-block lookups, one preload, passes alternated in one process, load
// 5-6), wall p50 6.34, 7.21, 5.61 us with the bracket against 4.78, 5.68,
// 5.07 us without. The longer a lookup, the likelier it overlaps one of
// the machine's stalls, so the bracket also fattened the tail. Stalls is
// a stall probe (ProbeStalls) run just before the wall pass.
func IdleLookups(ctx context.Context, tl *Timeline, f TargetFactory, threadCPU bool, progress func(int)) (IdleRun, error) {
	t, err := withPreload(ctx, f, tl.Stream.Events, progress).New()
	if err != nil {
		return IdleRun{}, err
	}
	shared := &reusedTarget{Target: t}
	one := TargetFactory{Name: f.Name, New: func() (Target, error) { return shared, nil }}
	lt := Merge(tl.Stream.LookupsOnly())
	var run IdleRun
	run.Stalls = ProbeStalls(StallProbe)
	s, err := Replay(ctx, lt, one, ReplayOptions{Readers: 1})
	if err != nil {
		return IdleRun{}, err
	}
	run.Wall = NewResult(f.Name, lt, s)
	if threadCPU {
		s, err := Replay(ctx, lt, one, ReplayOptions{Readers: 1, ThreadCPU: true})
		if err != nil {
			return IdleRun{}, err
		}
		run.CPU = NewResult(f.Name, lt, s)
	}
	return run, nil
}

// IdleRun is what IdleLookups measured: the wall-clock pass, the thread
// CPU pass (zero without one) and the stall probe before them.
type IdleRun struct {
	Wall, CPU Result
	Stalls    Stalls
}

// reusedTarget lets one preloaded target serve several lookup-only
// replays: it is started and finished once (the first Finish's state is
// kept), and lookups still run inline after that, with no events to apply.
type reusedTarget struct {
	Target
	started, finished bool
	final             Final
	err               error
}

func (r *reusedTarget) Start(ctx context.Context, readers int) error {
	if r.started {
		return nil
	}
	r.started = true
	return r.Target.Start(ctx, readers)
}

func (r *reusedTarget) Finish(ctx context.Context) (Final, error) {
	if !r.finished {
		r.finished = true
		r.final, r.err = r.Target.Finish(ctx)
	}
	return r.final, r.err
}
