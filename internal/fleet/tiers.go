package fleet

import (
	"context"
	"sync"

	"github.com/kvrouter/kvrouter/internal/eventplane"
	"github.com/kvrouter/kvrouter/internal/mockerd"
	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/mocker"
)

// Lower tiers of a fleet (DESIGN.md §7). Config.Tiers gives every worker
// host and disk tiers of its own; a shared= capacity builds one G4 store
// for the whole fleet, which works because the workers are servers of this
// one process: the store is one mocker.SharedStore, every engine call
// that may touch it holds one mutex (mockerd.Config.SharedLock), and its
// events, under the store's own identity (mocker.SharedStoreID), go to one
// sink: a publisher of their own on NATS, or the router's Apply in Direct
// mode. Separate `kvrouter mocker` processes cannot share a G4 store.

// tierSetup is the fleet's lower-tier wiring, built by setupTiers.
type tierSetup struct {
	tiers mocker.TierSizes
	lock  sync.Mutex
	sinks []mockerd.EventSink
	pub   *eventplane.Publisher // NATS mode with a G4 store: run by Run
}

// setupTiers parses cfg.Tiers (validated in New) into f.tiers and gives
// f.cfg.Engine the tiers' capacities and the fleet's G4 store.
func (f *Fleet) setupTiers() {
	t, _ := mocker.ParseTierSizes(f.cfg.Tiers)
	f.tiers = &tierSetup{tiers: t}
	if !t.Enabled() {
		return
	}
	e := &f.cfg.Engine
	e.Tiers = t.Engine(e.Tiers, e.NumBlocks)
	if n := t.SharedBlocks(e.NumBlocks); n > 0 {
		e.Tiers.Shared = mocker.NewSharedStore(mocker.SharedConfig{Blocks: n, Worker: kvevents.Worker{ID: mocker.SharedStoreID}})
	}
}

// storeSinks returns the sinks of the G4 store's events (nil without a
// store): with conn, a publisher of their own (started by startStore).
func (f *Fleet) storeSinks(conn *eventplane.Conn) []mockerd.EventSink {
	if f.cfg.Engine.Tiers.Shared == nil {
		return nil
	}
	ts := f.tiers
	if ts.sinks != nil {
		return ts.sinks
	}
	if conn != nil {
		ts.pub = eventplane.NewPublisher(conn, eventplane.PublisherConfig{Model: f.cfg.Model, Logger: f.log, AssignIDs: true})
		ts.sinks = []mockerd.EventSink{ts.pub}
	} else {
		ts.sinks = []mockerd.EventSink{mockerd.EventSinkFunc(func(_ context.Context, ev kvevents.Event) error {
			return f.Frontend().Apply(&ev)
		})}
	}
	return ts.sinks
}

// workerTiers sets a worker's mockerd config for the fleet's G4 store.
func (f *Fleet) workerTiers(mc *mockerd.Config, conn *eventplane.Conn) {
	if f.cfg.Engine.Tiers.Shared == nil {
		return
	}
	mc.SharedLock = &f.tiers.lock
	mc.SharedSinks = f.storeSinks(conn)
}
