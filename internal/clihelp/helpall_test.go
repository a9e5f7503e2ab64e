package clihelp

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestHelpAllWithoutSections: --help-all on a command that has no sections
// (and so no --help-all flag) prints its help, which lists every flag,
// instead of "unknown flag: --help-all"; the command does not run.
func TestHelpAllWithoutSections(t *testing.T) {
	ran := false
	root := &cobra.Command{Use: "tool"}
	root.SetFlagErrorFunc(FlagError)
	plain := &cobra.Command{Use: "plain", Short: "a plain command", RunE: func(*cobra.Command, []string) error { ran = true; return nil }}
	plain.Flags().Int("workers", 4, "how many workers")
	root.AddCommand(plain)
	for _, args := range [][]string{{"plain", "--help-all"}, {"--help-all"}} {
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&out)
		root.SetArgs(args)
		if err := root.Execute(); err != nil {
			t.Errorf("%v: %v", args, err)
		}
		if want := map[bool]string{true: "--workers int", false: "plain"}[len(args) == 2]; !strings.Contains(out.String(), want) {
			t.Errorf("%v: no %q in\n%s", args, want, out.String())
		}
	}
	if ran {
		t.Error("plain ran on --help-all")
	}
}
