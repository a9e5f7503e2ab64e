package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kvrouter/kvrouter/internal/app"
	"github.com/kvrouter/kvrouter/internal/epp"
	"github.com/spf13/pflag"
)

// TestEveryNumericFlagHasARange: every numeric flag (number or duration)
// of kvrouter-epp has a range in app.FlagRanges, and its default is
// inside it (a default is never refused).
func TestEveryNumericFlagHasARange(t *testing.T) {
	if app.FlagRanges["fallbacks"] != app.Ints(0, epp.MaxFallbacks) {
		t.Errorf("--fallbacks range %v, want [0, epp.MaxFallbacks]", app.FlagRanges["fallbacks"])
	}
	n := 0
	c := newEPPCmd()
	c.Flags().VisitAll(func(f *pflag.Flag) {
		if !app.IsNumericFlag(f) {
			return
		}
		n++
		if _, ok := app.FlagRanges[f.Name]; !ok {
			t.Errorf("--%s (%s): no range in app.FlagRanges", f.Name, f.Value.Type())
		}
	})
	if n == 0 {
		t.Error("no numeric flag seen")
	}
	if err := app.CheckFlagRanges(c.Flags(), nil); err != nil {
		t.Errorf("defaults out of range: %v", err)
	}
}

// TestFlagRangeErrors: a value out of range stops kvrouter-epp before it
// builds anything, with an error naming the flag, its variable, its YAML
// key and the range; in range, it prints its config.
func TestFlagRangeErrors(t *testing.T) {
	run := func(args ...string) error {
		c := newEPPCmd()
		c.SetOut(&bytes.Buffer{})
		c.SetErr(&bytes.Buffer{})
		c.SetArgs(append(args, "--print-config"))
		return c.Execute()
	}
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"--fallbacks", "99"}, []string{"--fallbacks", "KVROUTER_FALLBACKS", "epp.fallbacks", "[0, 16]"}},
		{[]string{"--index-writers", "2000"}, []string{"--index-writers", "router.index.concurrent.writers"}},
		{[]string{"--pool-zmq-port", "70000"}, []string{"--pool-zmq-port", "pool.zmq_port", "[0, 65535]"}},
	} {
		err := run(c.args...)
		if err == nil {
			t.Errorf("%v: accepted", c.args)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: error %q does not name %q", c.args, err, w)
			}
		}
	}
	if err := run("--fallbacks", "16"); err != nil {
		t.Errorf("--fallbacks 16: %v", err)
	}
}
