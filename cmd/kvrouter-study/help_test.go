package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kvrouter/kvrouter/internal/clihelp"
)

// TestSimHelp: sim's --help shows its sections and --help-all every flag
// (clihelp.Verify); sim reads no environment, so its help does not claim
// it; the removed --speed names its replacement.
func TestSimHelp(t *testing.T) {
	h := clihelp.Help{Sections: simSections}
	if err := h.Check(newSimCmd()); err != nil {
		t.Error(err)
	}
	if err := clihelp.Verify(newRootCmd, []string{"sim"}, h); err != nil {
		t.Error(err)
	}
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs([]string{"sim", "--help"})
	if err := root.Execute(); err != nil || strings.Contains(out.String(), "KVROUTER_") {
		t.Errorf("sim --help: %v\n%s", err, out.String())
	}
	wantErrors(t, map[string]string{"sim --speed 2": "--speed is now --rate-scale", "replay --limt 3": "(did you mean --limit?)"})
}

// wantErrors runs each command line and checks that it fails saying the
// text it maps to.
func wantErrors(t *testing.T, cases map[string]string) {
	t.Helper()
	for args, want := range cases {
		root := newRootCmd()
		root.SetOut(&bytes.Buffer{})
		root.SetErr(&bytes.Buffer{})
		root.SetArgs(strings.Fields(args))
		if err := root.Execute(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err %v, want %q", args, err, want)
		}
	}
}

// TestBenchFrontendHelp: bench frontend's --help shows its sections and
// --help-all every flag; the removed --jitter (arrivals are Poisson now)
// names --seed, and --rounds out of its range is refused.
func TestBenchFrontendHelp(t *testing.T) {
	h := clihelp.Help{Sections: benchFrontendSections}
	if err := h.Check(newBenchFrontendCmd()); err != nil {
		t.Error(err)
	}
	if err := clihelp.Verify(newRootCmd, []string{"bench", "frontend"}, h); err != nil {
		t.Error(err)
	}
	wantErrors(t, map[string]string{"bench frontend --jitter": "--jitter is now --seed",
		"bench frontend --rounds -1": "--rounds -1: out of range"})
}
