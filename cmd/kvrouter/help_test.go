package main

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/internal/app"
	"github.com/kvrouter/kvrouter/internal/cli"
	"github.com/kvrouter/kvrouter/internal/clihelp"
	"github.com/kvrouter/kvrouter/internal/fleet"
	"github.com/spf13/cobra"
)

// helpCommands are the commands with sectioned help and their
// declarations.
var helpCommands = []struct {
	name string
	cmd  func() *cobra.Command
	help clihelp.Help
}{
	{"serve", newServeCmd, clihelp.Help{Sections: cli.ServeSections}},
	{"up", newUpCmd, clihelp.Help{Sections: upSections}},
	{"mocker", newMockerCmd, clihelp.Help{Sections: mockerSections}},
}

// runHelp runs `kvrouter <args>` and returns its output.
func runHelp(t *testing.T, args ...string) string {
	t.Helper()
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	if err := root.Execute(); err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return out.String()
}

// TestHelpSectionsComplete: every flag of every sectioned command is in
// exactly one section, and every name a section lists is a flag. A new
// flag fails here until a section lists it.
func TestHelpSectionsComplete(t *testing.T) {
	for _, hc := range helpCommands {
		if err := hc.help.Check(hc.cmd()); err != nil {
			t.Errorf("%s:\n%v", hc.name, err)
		}
	}
}

// TestHelpShowsSections: --help lists exactly the Shown flags, under their
// sections, a dozen or two, and a footer counting the rest; --help-all
// lists every flag under the same sections and no "Other".
func TestHelpShowsSections(t *testing.T) {
	for _, hc := range helpCommands {
		if err := clihelp.Verify(newRootCmd, []string{hc.name}, hc.help); err != nil {
			t.Errorf("%s:\n%v", hc.name, err)
		}
	}
}

// TestHelpFooterEnv: the commands that read the environment say how a
// flag maps to its variable and the --config file; up and sim, which read
// neither, does not claim it (kvrouter-epp and kvrouter-study test
// theirs).
func TestHelpFooterEnv(t *testing.T) {
	for cmd, want := range map[string]string{
		"serve":  "(--workers-file: KVROUTER_WORKERS_FILE;",
		"mocker": "(--advertise-url: KVROUTER_ADVERTISE_URL;",
	} {
		text := runHelp(t, cmd, "--help")
		for _, w := range []string{want, "A KVROUTER_* variable that names no flag is an error.", "key of the YAML file --config reads",
			"Precedence: flag > environment > file > default."} {
			if !strings.Contains(text, w) {
				t.Errorf("%s --help: no %q in footer:\n%s", cmd, w, text[strings.LastIndex(text, "--help-all"):])
			}
		}
	}
	for _, cmd := range []string{"up"} {
		if text := runHelp(t, cmd, "--help"); strings.Contains(text, "KVROUTER_") {
			t.Errorf("%s reads no environment, but its --help says:\n%s", cmd, text)
		}
	}
	if got := clihelp.EnvName(app.EnvPrefix, "busy-kv-usage"); got != app.EnvName("busy-kv-usage") {
		t.Errorf("help's variable %s, Resolve's %s", got, app.EnvName("busy-kv-usage"))
	}
}

// TestDidYouMean: a mistyped flag names the closest one, on sectioned
// commands and the others; a removed alias names its replacement.
func TestDidYouMean(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--worker-url", "http://a"}, "unknown flag: --worker-url (did you mean --worker?)"},
		{[]string{"serve", "--blok-size", "16"}, "unknown flag: --blok-size (did you mean --block-size?)"},
		{[]string{"mocker", "--num-block", "16"}, "(did you mean --num-blocks?)"},
		{[]string{"up", "--worker", "2"}, "(did you mean --workers?)"},
		{[]string{"hash", "--blocksize", "16"}, "(did you mean --block-size?)"},
		{[]string{"serve", "--zzzzzzzz"}, "unknown flag: --zzzzzzzz"},
	} {
		root := newRootCmd()
		root.SetOut(&bytes.Buffer{})
		root.SetErr(&bytes.Buffer{})
		root.SetArgs(tc.args)
		err := root.Execute()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err %v, want %q", tc.args, err, tc.want)
		}
		if strings.Contains(tc.want, "zzz") && err != nil && strings.Contains(err.Error(), "did you mean") {
			t.Errorf("%v: suggests a flag far from it: %v", tc.args, err)
		}
	}
}

// TestUnknownEnvRefused: serve refuses a KVROUTER_* variable that names no
// flag, naming the closest (it used to start as if the variable were
// unset).
func TestUnknownEnvRefused(t *testing.T) {
	t.Setenv("KVROUTER_OVERLAP_CREDT", "2")
	root := newRootCmd()
	root.SetOut(&bytes.Buffer{})
	root.SetArgs([]string{"serve", "--print-config"})
	err := root.Execute()
	if err == nil || !strings.Contains(err.Error(), "KVROUTER_OVERLAP_CREDT names no flag of \"serve\" (did you mean KVROUTER_OVERLAP_CREDIT?)") {
		t.Fatalf("err %v", err)
	}
}

// TestUpDrainTimeout: up takes serve's --drain-timeout (same default) and
// hands it to the fleet's router; it was fixed at 5s, cutting longer
// streams on Ctrl-C.
func TestUpDrainTimeout(t *testing.T) {
	serveDef := newServeCmd().Flags().Lookup("drain-timeout").DefValue
	f := newUpCmd().Flags().Lookup("drain-timeout")
	if f == nil || f.DefValue != serveDef {
		t.Fatalf("up --drain-timeout %v, want serve's default %s", f, serveDef)
	}
	stop := errors.New("stop before starting")
	var got []time.Duration
	newFleet = func(fc fleet.Config) (*fleet.Fleet, error) {
		got = append(got, fc.Frontend.DrainTimeout)
		return nil, stop
	}
	defer func() { newFleet = fleet.New }()
	for _, args := range [][]string{{"--drain-timeout", "2m"}, nil} {
		c := newUpCmd()
		c.SetArgs(args)
		c.SetOut(&bytes.Buffer{})
		c.SetErr(&bytes.Buffer{})
		if err := c.ExecuteContext(context.Background()); !errors.Is(err, stop) {
			t.Fatalf("%v: %v", args, err)
		}
	}
	want := app.DefaultServeConfig().Frontend.DrainTimeout
	if len(got) != 2 || got[0] != 2*time.Minute || got[1] != want {
		t.Fatalf("fleet drain timeouts %v, want [2m0s %v]", got, want)
	}
}

// TestMovedCommands: a command that moved to kvrouter-study or
// kvrouter-epp answers where it went (it was "unknown command"), with any
// flags after it, and stays out of the help.
func TestMovedCommands(t *testing.T) {
	for args, want := range map[string]string{
		"sim --limit 300 --json":    "kvrouter sim is now kvrouter-study sim, a binary of its own (go run ./cmd/kvrouter-study)",
		"bench index":               "kvrouter bench is now kvrouter-study bench",
		"epp --pool-selector app=x": "kvrouter epp is now kvrouter-epp, a binary of its own (go run ./cmd/kvrouter-epp)",
	} {
		root := newRootCmd()
		root.SetOut(&bytes.Buffer{})
		root.SetErr(&bytes.Buffer{})
		root.SetArgs(strings.Fields(args))
		if err := root.Execute(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", args, err, want)
		}
	}
	for _, line := range strings.Split(runHelp(t, "--help"), "\n") {
		if f := strings.Fields(line); len(f) > 0 && strings.HasPrefix(line, "  ") && slices.Contains([]string{"sim", "replay", "bench", "trace", "epp"}, f[0]) {
			t.Errorf("moved command listed in the help: %q", line)
		}
	}
}
