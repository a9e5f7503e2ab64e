package router

import "sync"

// OutputAverage estimates a request's output length, for
// Request.OutputTokens (Config.TrackOutputBlocks), from the output
// lengths of completed requests: an exponential moving average per key
// (the model name; "" for one fleet-wide figure) over about Window
// requests. It is what a router can know without a client's hint; the
// simulator (internal/sim) measures routing with the same estimator. Safe
// for concurrent use.
type OutputAverage struct {
	alpha float64
	mu    sync.Mutex
	avg   map[string]float64
}

// NewOutputAverage returns an estimator averaging over about window
// requests (window < 1 means 100).
func NewOutputAverage(window int) *OutputAverage {
	if window < 1 {
		window = 100
	}
	return &OutputAverage{alpha: 2 / (float64(window) + 1), avg: map[string]float64{}}
}

// Observe records a completed request's output length in tokens
// (negative counts as 0).
func (a *OutputAverage) Observe(key string, tokens int) {
	t := float64(max(tokens, 0))
	a.mu.Lock()
	defer a.mu.Unlock()
	v, ok := a.avg[key]
	if !ok {
		a.avg[key] = t
		return
	}
	a.avg[key] = v + a.alpha*(t-v)
}

// Estimate returns the expected output length in tokens for key, rounded
// to the nearest token; 0 before any observation.
func (a *OutputAverage) Estimate(key string) int {
	n, _ := a.Lookup(key)
	return n
}

// Lookup is Estimate, and whether key has any observation.
func (a *OutputAverage) Lookup(key string) (int, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	v, ok := a.avg[key]
	return int(v + 0.5), ok
}
