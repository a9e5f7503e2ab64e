package main

import (
	"path/filepath"
	"testing"

	"github.com/kvrouter/kvrouter/internal/clihelp"
	"github.com/spf13/cobra"
)

// TestREADMEFlagsAndDefaults: the flags docs/study-tools.md names for replay,
// bench frontend and bench index exist, with the defaults it states ("" =
// any default): bench index replays the real Mooncake conversation trace
// unless told otherwise.
func TestREADMEFlagsAndDefaults(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cmd   func() *cobra.Command
		flags map[string]string
	}{
		{"replay", newReplayCmd, map[string]string{"url": "", "trace": "conversation", "speed": "8", "limit": "600", "rate": "0",
			"unpaced": "false", "compare": "", "charts": "", "json": "false", "speedup-ratio": "4", "workers": "4",
			"speedup-ratios": "[]"}},
		{"bench frontend", newBenchFrontendCmd, map[string]string{"rate": "1000", "prompt-tokens": "256", "max-tokens": "16",
			"floor": "false", "rounds": "0", "seed": "1", "interleave": "true"}},
		{"bench index", newBenchIndexCmd, map[string]string{"trace": "conversation"}},
	} {
		if err := clihelp.CheckDefaults(tc.cmd(), tc.flags); err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

// TestDocCommandsParse: every kvrouter-study command line in a fenced block
// of README.md or a docs/ page (also as go run ./cmd/kvrouter-study) names a
// real subcommand and parses with its flags.
func TestDocCommandsParse(t *testing.T) {
	if err := clihelp.CheckDocCommands(filepath.Join("..", ".."), newRootCmd, 10); err != nil {
		t.Error(err)
	}
}
