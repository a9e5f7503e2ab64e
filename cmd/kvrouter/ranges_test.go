package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kvrouter/kvrouter/internal/app"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// rangedCommands are the long-running commands whose numeric flags are
// range-checked before they start.
var rangedCommands = []string{"serve", "up", "mocker", "bridge"}

func subcommand(t *testing.T, name string) *cobra.Command {
	t.Helper()
	for _, c := range newRootCmd().Commands() {
		if c.Name() == name {
			return c
		}
	}
	t.Fatalf("no command %q", name)
	return nil
}

// TestEveryNumericFlagHasARange: every numeric flag (number or duration)
// of serve, up, mocker and bridge has a range in app.FlagRanges, and
// its default is inside it (a default is never refused); kvrouter-epp's
// test checks the picker's.
func TestEveryNumericFlagHasARange(t *testing.T) {
	for _, name := range rangedCommands {
		n := 0
		subcommand(t, name).Flags().VisitAll(func(f *pflag.Flag) {
			if !app.IsNumericFlag(f) {
				return
			}
			n++
			if _, ok := app.FlagRanges[f.Name]; !ok {
				t.Errorf("%s --%s (%s): no range in app.FlagRanges", name, f.Name, f.Value.Type())
			}
		})
		if n == 0 {
			t.Errorf("%s: no numeric flag seen", name)
		}
		fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
		fs.AddFlagSet(subcommand(t, name).Flags())
		if err := app.CheckFlagRanges(fs, nil); err != nil {
			t.Errorf("%s: defaults out of range: %v", name, err)
		}
	}
}

// runArgs runs the binary's command line (the same cobra tree main runs)
// and returns its error.
func runArgs(args ...string) error {
	root := newRootCmd()
	root.SetOut(&bytes.Buffer{})
	root.SetErr(&bytes.Buffer{})
	root.SetArgs(args)
	return root.Execute()
}

// TestFlagRangeErrors: a numeric value out of range, from a flag, the
// environment or the YAML file, stops the command before it builds
// anything, with an error naming the flag, its variable, its YAML key and
// the range. Several of these used to exit naming nothing (the
// core's "indexer: concurrent writers -1 < 0"), and --index-writers
// 100000000 allocated gigabytes before any check.
func TestFlagRangeErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		env  [2]string
		file string
		want []string
	}{
		{args: []string{"serve", "--index-writers", "100000000"},
			want: []string{"--index-writers", "KVROUTER_INDEX_WRITERS", "router.index.concurrent.writers", "100000000", "[0, 1024]"}},
		{args: []string{"serve", "--index-writers", "-1"}, want: []string{"--index-writers", "[0, 1024]"}},
		{args: []string{"serve", "--jump-stride", "-5"}, want: []string{"--jump-stride", "KVROUTER_JUMP_STRIDE", "router.index.flash.stride", "[0, 65536]"}},
		{args: []string{"serve", "--stale-limit", "-1s"}, want: []string{"--stale-limit", "KVROUTER_STALE_LIMIT", "router.loads.stale_after", "-1s", "[0s, 168h0m0s]"}},
		{args: []string{"serve", "--retries", "-1"}, want: []string{"--retries", "KVROUTER_RETRIES", "retries", "[0, 64]"}},
		{args: []string{"serve", "--max-body-bytes", "-1"}, want: []string{"--max-body-bytes", "KVROUTER_MAX_BODY_BYTES", "max_body_bytes", "[0, 1073741824]"}},
		{args: []string{"serve", "--snapshot-keep", "-1"}, want: []string{"--snapshot-keep", "KVROUTER_SNAPSHOT_KEEP", "replica.snapshot_keep", "[0, 100]"}},
		{args: []string{"serve", "--busy-kv-usage", "1.5"}, want: []string{"--busy-kv-usage", "[0, 1]"}},
		{args: []string{"serve", "--temperature", "NaN"}, want: []string{"--temperature", "finite"}},
		{args: []string{"mocker", "--watermark", "1"}, want: []string{"--watermark", "[0, 1)"}},
		{args: []string{"serve", "--body-timeout", "48h"}, want: []string{"--body-timeout", "or negative (off)"}},
		{args: []string{"serve"}, env: [2]string{"KVROUTER_INDEX_WRITERS", "-1"},
			want: []string{"--index-writers", "KVROUTER_INDEX_WRITERS", "[0, 1024]"}},
		{args: []string{"serve"}, file: "router:\n  index:\n    concurrent:\n      writers: 5000\n",
			want: []string{"--index-writers", "router.index.concurrent.writers", "5000"}},
		{args: []string{"mocker", "--num-blocks", "-1"}, want: []string{"--num-blocks", "KVROUTER_NUM_BLOCKS", "engine.num_blocks", "[1, 1073741824]"}},
		{args: []string{"mocker", "--watermark", "1"}, want: []string{"--watermark", "[0, 1)"}},
		{args: []string{"mocker", "--max-num-seqs", "0"}, want: []string{"--max-num-seqs", "[1, 1048576]"}},
		{args: []string{"bridge", "--zmq", "tcp://127.0.0.1:1", "--worker-id", "1", "--dp-size", "100000"},
			want: []string{"--dp-size", "KVROUTER_DP_SIZE", "dp_size", "[1, 1024]"}},
		{args: []string{"bridge", "--nats-port", "-1"}, want: []string{"--nats-port", "nats.port"}},
		{args: []string{"up", "--workers", "100000"}, want: []string{"--workers", "100000", "[1, 256]"}},
		{args: []string{"up", "--workers", "0"}, want: []string{"--workers", "[1, 256]"}},
		{args: []string{"up", "--disagg", "1000:1000"}, want: []string{"--disagg", "at most 256"}},
	} {
		name := strings.Join(c.args, " ") + " " + c.env[0] + " " + c.file
		t.Run(name, func(t *testing.T) {
			if c.env[0] != "" {
				t.Setenv(c.env[0], c.env[1])
			}
			args := c.args
			if c.file != "" {
				args = append(args, "--config", writeFile(t, c.file))
			}
			if args[0] != "up" {
				// --print-config would print the config once it is
				// valid: nothing starts either way.
				args = append(args, "--print-config")
			}
			err := runArgs(args...)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
		})
	}
	// In range, the same commands print their config.
	for _, args := range [][]string{
		{"serve", "--index-writers", "1024", "--body-timeout", "-1s"},
		{"mocker", "--watermark", "0.5"},
		{"bridge", "--zmq", "tcp://127.0.0.1:1", "--worker-id", "1", "--dp-size", "8"},
	} {
		if err := runArgs(append(args, "--print-config")...); err != nil {
			t.Errorf("%v: %v", args, err)
		}
	}
}
