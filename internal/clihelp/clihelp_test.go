package clihelp

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

func TestSuggest(t *testing.T) {
	flags := []string{"worker", "workers-file", "block-size", "nats", "nats-user", "num-blocks", "seed", "rate-scale"}
	for _, tc := range []struct{ in, want string }{
		{"worker-url", "worker"},    // a prefix of it
		{"workers", "worker"},       // one edit
		{"blok-size", "block-size"}, // one edit
		{"blocksize", "block-size"}, // one edit
		{"num-block", "num-blocks"}, // one edit
		{"nats-usr", "nats-user"},   // one edit
		{"natsuser", "nats-user"},   // one edit
		{"zzzzzzzz", ""},            // nothing near
		{"rate", "rate-scale"},      // a prefix
		{"x", ""},                   // too short for a prefix, too far
		{"sed", "seed"},             // one edit
		{"workers-files", "workers-file"},
		{"wokrer", "worker"},      // a transposition
		{"nast", "nats"},          // a transposition
		{"nats-usr", "nats-user"}, // nearer than its prefix nats
	} {
		if got := Suggest(tc.in, flags); got != tc.want {
			t.Errorf("Suggest(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func testCmd() *cobra.Command {
	c := &cobra.Command{Use: "demo", Short: "a demo", RunE: func(*cobra.Command, []string) error { return nil }}
	for _, n := range []string{"a-one", "b", "c", "d"} {
		c.Flags().String(n, "", "flag "+n)
	}
	return c
}

// TestHelpAndCheck: --help prints Shown flags only, in order, with the
// count of the others; --help-all every flag, unlisted ones under Other;
// Check names the unlisted flag and the stale name.
func TestHelpAndCheck(t *testing.T) {
	h := Help{EnvPrefix: "X_", Sections: []Section{{Name: "First", Shown: "c a-one", More: "b gone"}}}
	run := func(args ...string) string {
		c := testCmd()
		Apply(c, h)
		var out bytes.Buffer
		c.SetOut(&out)
		c.SetArgs(args)
		if err := c.Execute(); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	help := run("--help")
	if !strings.Contains(help, "First:\n      --c string ") || strings.Index(help, "--c ") > strings.Index(help, "--a-one ") ||
		strings.Contains(help, "--b ") || strings.Contains(help, "Other:") ||
		!strings.Contains(help, "--help-all prints 2 more flags") || !strings.Contains(help, "(--a-one: X_A_ONE;") {
		t.Errorf("--help:\n%s", help)
	}
	all := run("--help-all")
	if !strings.Contains(all, "--b ") || !strings.Contains(all, "Other:\n      --d string") || strings.Contains(all, "more flags") {
		t.Errorf("--help-all:\n%s", all)
	}
	err := h.Check(testCmd())
	if err == nil || !strings.Contains(err.Error(), "--d is in no help section") || !strings.Contains(err.Error(), "lists --gone") {
		t.Errorf("Check: %v", err)
	}
	if err := (Help{Sections: []Section{{Name: "All", More: "a-one b c d"}}}).Check(testCmd()); err != nil {
		t.Errorf("Check of a complete list: %v", err)
	}
}

func TestReshow(t *testing.T) {
	got := Reshow([]Section{{Name: "S", Shown: "a b", More: "c d"}, {Name: "T", Shown: "e"}}, "d a")
	want := []Section{{Name: "S", Shown: "a d", More: "b c"}, {Name: "T", More: "e"}}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("Reshow = %+v, want %+v", got, want)
	}
}

// TestRunStillRuns: without --help-all the command's own RunE runs.
func TestRunStillRuns(t *testing.T) {
	ran := false
	c := &cobra.Command{Use: "demo", RunE: func(*cobra.Command, []string) error { ran = true; return nil }}
	Apply(c, Help{})
	c.SetArgs(nil)
	if err := c.Execute(); err != nil || !ran {
		t.Fatalf("ran %v, err %v", ran, err)
	}
}
