package app

import (
	"context"
	"log/slog"
	"regexp"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/router"
)

// TestStartupLogNamesIndex: serve's "router listening" line names the
// index overlap comes from under every policy: flash (the default) or
// radix under kv, approx under approx, none where no index is read. It
// printed index="" outside the kv policy.
func TestStartupLogNamesIndex(t *testing.T) {
	for _, tc := range []struct {
		policy router.Policy
		index  string
		want   string
	}{
		{router.PolicyKV, "", "flash"},
		{router.PolicyKV, "radix", "radix"},
		{router.PolicyApprox, "", "approx"},
		{router.PolicyRoundRobin, "", "none"},
	} {
		t.Run(tc.policy.String()+"/"+tc.want, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var logs syncBuffer
			cfg := DefaultServeConfig()
			cfg.Listen = "127.0.0.1:0"
			cfg.NoNATS = true
			cfg.Workers = []string{"http://127.0.0.1:1,id=1"}
			cfg.Frontend.LoadPollInterval = -1
			cfg.Frontend.Router.Policy = tc.policy
			cfg.Frontend.Index = tc.index
			cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			runServe(t, ctx, "serve", cfg)
			line := regexp.MustCompile(`msg="router listening".* index=(\S*)`)
			// The line is written beside readiness, not before it.
			deadline := time.Now().Add(10 * time.Second)
			tick := time.NewTicker(5 * time.Millisecond)
			defer tick.Stop()
			m := line.FindStringSubmatch(logs.String())
			for m == nil && time.Now().Before(deadline) {
				<-tick.C
				m = line.FindStringSubmatch(logs.String())
			}
			if m == nil {
				t.Fatalf("no start-up line in:\n%s", logs.String())
			}
			if m[1] != tc.want {
				t.Errorf("start-up log index=%s, want %s", m[1], tc.want)
			}
		})
	}
}
