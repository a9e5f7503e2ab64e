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
func IdleLookups(ctx context.Context, tl *Timeline, f TargetFactory, threadCPU bool, progress func(int)) (Result, error) {
	pf := withPreload(ctx, f, tl.Stream.Events, progress)
	lt := Merge(tl.Stream.LookupsOnly())
	s, err := Replay(ctx, lt, pf, ReplayOptions{Readers: 1, ThreadCPU: threadCPU})
	if err != nil {
		return Result{}, err
	}
	return NewResult(f.Name, lt, s), nil
}
