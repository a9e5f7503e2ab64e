package sim

import (
	"context"
	"testing"
	"time"
)

// TestRegretReport: the kv policy's regret adds up (the routing causes
// sum to reachable - chosen, nothing exceeds the prompt) and its causes
// show where a run provokes them: the queue under a queue threshold, and
// evictions after the route in a cache too small for the trace.
func TestRegretReport(t *testing.T) {
	routing := []string{"load", "temperature", "busy", "filter", "queue", "affinity"}
	for _, tc := range []struct {
		name string
		set  func(*Config)
		want []string // causes that must lose blocks
	}{
		{"queue", func(c *Config) { c.Router.Queue.Threshold = 0.5 }, []string{"queue"}},
		{"small-cache", func(c *Config) { c.Engine.NumBlocks = 48; c.EventDelay = 50 * time.Millisecond }, []string{"evicted_after_route"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recs := conversations(16, 4, 20*time.Millisecond, 5)
			cfg := smallConfig(recs, 2)
			cfg.Policies = []Policy{PolicyKV, PolicyRoundRobin}
			tc.set(&cfg)
			rep, err := Run(context.Background(), cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Policy(PolicyRoundRobin).Regret != nil {
				t.Errorf("round-robin reports regret")
			}
			rg := rep.Policy(PolicyKV).Regret
			if rg == nil {
				t.Fatal("kv reports no regret")
			}
			t.Logf("%+v", *rg)
			lost := int64(0)
			for _, c := range routing {
				lost += rg.Lost[c]
			}
			if rg.Prompt <= 0 || rg.Reachable > rg.Prompt || rg.Chosen > rg.Reachable || lost != rg.Reachable-rg.Chosen {
				t.Errorf("regret does not add up: %+v (routing losses %d)", *rg, lost)
			}
			for _, c := range tc.want {
				if rg.Lost[c] == 0 {
					t.Errorf("no blocks lost to %s: %+v", c, *rg)
				}
			}
		})
	}
}
