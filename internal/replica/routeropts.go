package replica

import (
	"context"
	"slices"

	"github.com/kvrouter/kvrouter/internal/eventplane"
	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/router"
)

// RouterOptions returns Options over rt's event-fed indexes (PolicyKV): Sink
// is rt.ApplyEvent; Flush flushes every tier's index that applies
// asynchronously (indexer.Concurrent); Dump concatenates every tier's dump,
// each event tagged with its tier, so a restore through ApplyEvent puts
// it back in its tier; Clear removes every worker from every tier. A
// shell that ingests through its own sink (metrics) replaces Sink.
func RouterOptions(rt *router.Router) Options {
	return Options{
		Sink: sinkFunc(rt.ApplyEvent),
		Flush: func(ctx context.Context) error {
			for t := range kvevents.NumTiers {
				if f, ok := rt.Index(kvevents.Tier(t)).(eventplane.Flusher); ok {
					if err := f.Flush(ctx); err != nil {
						return err
					}
				}
			}
			return nil
		},
		Dump: func() []kvevents.Event {
			var out []kvevents.Event
			for t := range kvevents.NumTiers {
				if ix := rt.Index(kvevents.Tier(t)); ix != nil {
					n := len(out)
					out = append(out, ix.Dump()...)
					for i := n; i < len(out); i++ {
						out[i].Tier = kvevents.Tier(t)
					}
				}
			}
			return out
		},
		Clear: func() {
			for t := range kvevents.NumTiers {
				ix := rt.Index(kvevents.Tier(t))
				if ix == nil {
					continue
				}
				var ids []uint64
				for _, ev := range ix.Dump() {
					ids = append(ids, ev.WorkerID)
				}
				slices.Sort(ids)
				for _, id := range slices.Compact(ids) {
					ix.RemoveWorker(id)
				}
			}
		},
	}
}

// sinkFunc adapts a function to eventplane.Sink.
type sinkFunc func(ev *kvevents.Event) error

func (f sinkFunc) Apply(ev *kvevents.Event) error { return f(ev) }
