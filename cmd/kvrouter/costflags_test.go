package main

import (
	"testing"
	"time"
)

// TestServeCostKnobs: the time cost's optional terms that sim measures
// are serve flags too, off by default, and reach the router config from
// flags and from the environment.
func TestServeCostKnobs(t *testing.T) {
	cfg, text := printConfig(t, "serve")
	rc := cfg.Frontend.Router
	s := rc.Selector
	if s.TailWeight != 0 || s.PassArrivals || s.DelayOthers || s.CacheValue != 0 || rc.Predict.HistoryTTL != 0 || s.Unclamped {
		t.Fatalf("defaults are not off:\n%s", text)
	}
	cfg, text = printConfig(t, "serve", "--tail-weight", "10", "--tail-quantile", "0.95", "--pass-arrivals", "--delay-others",
		"--cache-value", "0.5", "--cache-exclusive", "--imposed-others", "--decode-phase", "--pass-overdue",
		"--history-ttl", "5s", "--history-weight", "0.25", "--history-tie", "0.01", "--unclamped")
	rc = cfg.Frontend.Router
	s = rc.Selector
	if s.TailWeight != 10 || s.TailQuantile != 0.95 || !s.PassArrivals || !s.DelayOthers || s.CacheValue != 0.5 || !s.CacheExclusive ||
		!s.ImposedOthers || !s.DecodePhase || !s.PassOverdue || rc.Predict.HistoryTTL != 5*time.Second || s.HistoryWeight != 0.25 ||
		s.HistoryTie != 0.01 || !s.Unclamped {
		t.Fatalf("flags did not reach the router config:\n%s", text)
	}
	t.Setenv("KVROUTER_TAIL_WEIGHT", "3")
	t.Setenv("KVROUTER_PASS_ARRIVALS", "true")
	cfg, text = printConfig(t, "serve")
	if s := cfg.Frontend.Router.Selector; s.TailWeight != 3 || !s.PassArrivals {
		t.Fatalf("environment: tail weight %v, pass arrivals %v\n%s", s.TailWeight, s.PassArrivals, text)
	}
}
