package main

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// TestServeCostKnobs: the cost's experimental features are off by
// default and reach the router config from --enable-feature (repeated
// or comma-separated, each kept once), from KVROUTER_ENABLE_FEATURE and
// from the YAML key router.enable_feature; an unknown name is refused
// naming the known ones, and the deleted cost flags are unknown flags.
func TestServeCostKnobs(t *testing.T) {
	cfg, text := printConfig(t, "serve")
	rc := cfg.Frontend.Router
	if len(rc.EnableFeature) != 0 || rc.Selector.Unclamped {
		t.Fatalf("defaults are not off:\n%s", text)
	}
	cfg, text = printConfig(t, "serve", "--enable-feature", "tail-guard", "--enable-feature", "pass-arrivals,tail-guard", "--unclamped")
	rc = cfg.Frontend.Router
	if !slices.Equal(rc.EnableFeature, []string{"tail-guard", "pass-arrivals"}) || !rc.Selector.Unclamped {
		t.Fatalf("flags did not reach the router config: %q\n%s", rc.EnableFeature, text)
	}
	t.Setenv("KVROUTER_ENABLE_FEATURE", "pass-arrivals")
	cfg, text = printConfig(t, "serve")
	if got := cfg.Frontend.Router.EnableFeature; !slices.Equal(got, []string{"pass-arrivals"}) {
		t.Fatalf("environment: %q\n%s", got, text)
	}
	os.Unsetenv("KVROUTER_ENABLE_FEATURE") // t.Setenv restores it
	t.Setenv("KVROUTER_CONFIG", writeFile(t, "router:\n  enable_feature: [tail-guard]\n"))
	cfg, text = printConfig(t, "serve")
	if got := cfg.Frontend.Router.EnableFeature; !slices.Equal(got, []string{"tail-guard"}) {
		t.Fatalf("YAML: %q\n%s", got, text)
	}
	root := newRootCmd()
	root.SetArgs([]string{"serve", "--enable-feature", "delay-others", "--print-config"})
	err := root.Execute()
	if err == nil || !strings.Contains(err.Error(), `"delay-others"`) || !strings.Contains(err.Error(), "known: pass-arrivals, tail-guard") {
		t.Fatalf("unknown feature: %v", err)
	}
	for _, gone := range []string{"--pass-arrivals", "--decode-phase", "--pass-overdue", "--delay-others", "--imposed-others",
		"--cache-value=1", "--cache-exclusive", "--tail-weight=10", "--tail-quantile=0.9", "--history-ttl=1m", "--history-weight=1", "--history-tie=0.1"} {
		root := newRootCmd()
		root.SetArgs([]string{"serve", gone, "--print-config"})
		if err := root.Execute(); err == nil || !strings.Contains(err.Error(), "unknown flag") {
			t.Errorf("serve %s: %v, want an unknown flag", gone, err)
		}
	}
}
