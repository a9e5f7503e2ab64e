package frontend

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// routeCounts are the block and token counters every decision adds to,
// packed in one 64-byte object (one cache line: the allocator aligns
// that size class). In the live server a route finds them cold, and as
// separate prometheus.Counters each cost a miss per route; here they are
// integers, so each add is one atomic instruction, and the series are
// read at scrape time (docs/experiments/live-route-cost.md).
type routeCounts struct {
	promptBlocks, overlapBlocks, promptTokens, cachedTokens atomic.Uint64
	// kvrouter_route_blocks_total's routing kinds (regret.go)
	prompt, reachable, chosen atomic.Uint64
	_                         uint64 // the line's rest
}

// addCount adds n (never negative here) to c.
func addCount(c *atomic.Uint64, n int) { c.Add(uint64(max(n, 0))) }

// counterOf exports c as a counter series.
func counterOf(c *atomic.Uint64, opts prometheus.CounterOpts) prometheus.CounterFunc {
	return prometheus.NewCounterFunc(opts, func() float64 { return float64(c.Load()) })
}
