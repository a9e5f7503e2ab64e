package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/kvrouter/kvrouter/router"
	"github.com/kvrouter/kvrouter/selector"
)

// --seeds and --seed exclude each other: a flag-level rule, checked
// before anything runs.
func TestSimSeedsAndSeed(t *testing.T) {
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs([]string{"sim", "--quiet", "--seeds", "1,2", "--loads", "0.7", "--seed", "3"})
	if err := root.Execute(); err == nil || !strings.Contains(err.Error(), "--seed") {
		t.Errorf("--seeds with --seed: %v", err)
	}
}

// The dynamo preset sets Dynamo's block cost; an explicit flag still wins.
func TestRouterPreset(t *testing.T) {
	rc := router.DefaultConfig()
	cmd := &cobra.Command{Use: "x"}
	cmd.Flags().Float64Var(&rc.Selector.OverlapCredit, "overlap-credit", rc.Selector.OverlapCredit, "")
	cmd.Flags().DurationVar(&rc.Predict.TTL, "predict-ttl", rc.Predict.TTL, "")
	if err := cmd.ParseFlags([]string{"--overlap-credit", "3"}); err != nil {
		t.Fatal(err)
	}
	if err := applyRouterPreset(cmd, &rc, "dynamo"); err != nil {
		t.Fatal(err)
	}
	if rc.Selector.Cost != selector.CostBlocks || rc.Selector.PrefillLoadScale != 1 || rc.Predict.TTL != 0 || rc.Selector.OverlapCredit != 3 {
		t.Errorf("preset with flag override: %+v predict %v", rc.Selector, rc.Predict)
	}
	if err := applyRouterPreset(cmd, &rc, "nope"); err == nil {
		t.Error("unknown preset accepted")
	}
}

// Progress on a stderr that is not a terminal (a log) is plain lines, no
// bar: no carriage returns or escape sequences.
func TestSimProgressInALog(t *testing.T) {
	root := newRootCmd()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs([]string{"sim", "--trace", "synth", "--limit", "20", "--workers", "2", "--policies", "kv,round-robin"})
	if err := root.Execute(); err != nil {
		t.Fatal(err, errOut.String())
	}
	if p := errOut.String(); strings.ContainsAny(p, "\r\x1b") || !strings.Contains(p, "synth: ") || !strings.Contains(p, "(100%)\n") {
		t.Errorf("progress in a log: %q", p)
	}
}
