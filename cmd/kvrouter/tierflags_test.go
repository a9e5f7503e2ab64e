package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/kvrouter/kvrouter/internal/app"
	"github.com/kvrouter/kvrouter/selector"
)

// TestServeTierFlags: serve reads a worker's KV as one chain across tiers
// by default; --onboard-cost sets the default links and the environment
// turns it on like any flag; --shared-weight and --tier-chains=false land
// in the router config.
func TestServeTierFlags(t *testing.T) {
	cfg, text := printConfig(t, "serve")
	rc := cfg.Frontend.Router
	if !rc.TierChains || !rc.Selector.Onboard.IsZero() {
		t.Fatalf("defaults: tier chains %v, onboard %+v\n%s", rc.TierChains, rc.Selector.Onboard, text)
	}
	cfg, text = printConfig(t, "serve", "--onboard-cost", "--shared-weight", "0.5", "--tier-chains=false")
	rc = cfg.Frontend.Router
	if rc.TierChains || rc.Selector.Onboard != selector.DefaultOnboard() || rc.Selector.SharedWeight != 0.5 {
		t.Fatalf("flags: tier chains %v, onboard %+v, shared weight %v\n%s", rc.TierChains, rc.Selector.Onboard, rc.Selector.SharedWeight, text)
	}
	t.Setenv("KVROUTER_ONBOARD_COST", "true")
	cfg, text = printConfig(t, "serve")
	if cfg.Frontend.Router.Selector.Onboard != selector.DefaultOnboard() {
		t.Fatalf("KVROUTER_ONBOARD_COST=true: onboard %+v\n%s", cfg.Frontend.Router.Selector.Onboard, text)
	}
}

// TestMockerTierFlags: --tiers, --write-through and --offload-min-reuse
// reach the mocker's config, the spec also from the environment and the
// file, with flag > environment > file.
func TestMockerTierFlags(t *testing.T) {
	mockerConfig := func(args ...string) app.MockerConfig {
		t.Helper()
		root := newRootCmd()
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetArgs(append(append([]string{"mocker"}, args...), "--print-config"))
		if err := root.Execute(); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		path := filepath.Join(t.TempDir(), "printed.yaml")
		if err := os.WriteFile(path, out.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		var cfg app.MockerConfig
		if err := app.LoadFile(path, &cfg); err != nil {
			t.Fatalf("printed config does not load: %v\n%s", err, out.String())
		}
		return cfg
	}
	c := mockerConfig("--tiers", "host=4x,disk=16x", "--write-through", "--offload-min-reuse", "2")
	if c.Tiers != "host=4x,disk=16x" || !c.Mocker.Engine.Tiers.WriteThrough || c.Mocker.Engine.Tiers.MinReuse != 2 {
		t.Fatalf("flags: tiers %q, write-through %v, min reuse %d", c.Tiers, c.Mocker.Engine.Tiers.WriteThrough, c.Mocker.Engine.Tiers.MinReuse)
	}
	file := writeFile(t, "tiers: host=2x\n")
	if c := mockerConfig("--config", file); c.Tiers != "host=2x" {
		t.Fatalf("file: tiers %q", c.Tiers)
	}
	t.Setenv("KVROUTER_TIERS", "disk=8x")
	if c := mockerConfig("--config", file); c.Tiers != "disk=8x" {
		t.Fatalf("env over file: tiers %q", c.Tiers)
	}
	if c := mockerConfig("--config", file, "--tiers", "host=1x"); c.Tiers != "host=1x" {
		t.Fatalf("flag over env: tiers %q", c.Tiers)
	}
	root := newRootCmd()
	root.SetOut(&bytes.Buffer{})
	root.SetErr(&bytes.Buffer{})
	root.SetArgs([]string{"mocker", "--tiers", "ram=2x", "--print-config"})
	if err := root.Execute(); err == nil {
		t.Fatal("--tiers ram=2x accepted")
	}
}
