package replica

import (
	"context"

	"github.com/kvrouter/kvrouter/internal/eventplane"
	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/router"
)

// RouterOptions returns Options over rt's event-fed indexes (PolicyKV): Sink
// is rt.ApplyEvent; Flush flushes every tier's index that applies
// asynchronously (indexer.Concurrent); Dump is rt.DumpTiers (every tier's
// record, each event tagged with its tier, so a restore through ApplyEvent
// puts it back in its tier, cross-tier views included); Clear is
// rt.ClearKV (every worker out of every tier, views forgotten). A shell
// that ingests through its own sink (metrics) replaces Sink.
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
		Dump:  rt.DumpTiers,
		Clear: rt.ClearKV,
	}
}

// sinkFunc adapts a function to eventplane.Sink.
type sinkFunc func(ev *kvevents.Event) error

func (f sinkFunc) Apply(ev *kvevents.Event) error { return f(ev) }
