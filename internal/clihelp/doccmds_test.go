package clihelp

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

func docTestRoot() *cobra.Command {
	root := &cobra.Command{Use: "tool"}
	run := &cobra.Command{Use: "run", RunE: func(*cobra.Command, []string) error { return nil }, Args: cobra.NoArgs}
	run.Flags().Int("workers", 4, "")
	run.Flags().String("nats", "", "")
	run.Flags().Bool("quiet", false, "")
	group := &cobra.Command{Use: "group"}
	group.AddCommand(&cobra.Command{Use: "leaf", Run: func(*cobra.Command, []string) {}})
	root.AddCommand(run, group)
	return root
}

// TestCheckDocCommands: the command lines of a binary are found in fenced
// blocks (plain, ./path, go run, VAR=x, chains, continuations) and in
// prose code spans, outside docs/experiments, and each mistake is reported:
// unknown subcommand, group without a leaf, unknown flag, bad value,
// stray argument; templates (capital placeholders, a flag named last,
// [optional] words, "...") pass.
func TestCheckDocCommands(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("README.md", "Run `tool run --workers 2`, `tool run --nats URL`, `tool run --nats`, `tool ...`, not `tool runn`.\n"+
		"```sh\n"+
		"go run ./cmd/tool run --workers 8   # comment\n"+
		"KVROUTER_X=1 ./bin/tool run \\\n  --quiet --workers=3 > out.txt\n"+
		"make && tool group leaf | head\n"+
		"tool run [--quiet] --workers 1\n"+
		"tool-other sim\n"+
		"```\n")
	write("docs/a.md", "```\ntool run --wrokers 2\ntool run --workers two\ntool group\ntool run extra\n```\n")
	write("docs/experiments/old.md", "```\ntool sim\n```\n")

	err := CheckDocCommands(dir, docTestRoot, 14)
	want := []string{
		"found 13 command lines of tool, want at least 14",
		`README.md: "tool runn": no such command: unknown command "runn" for "tool"`,
		`docs/a.md: "tool run --wrokers 2": tool run: unknown flag: --wrokers`,
		`docs/a.md: "tool run --workers two": tool run: invalid argument "two" for "--workers" flag: strconv.ParseInt: parsing "two": invalid syntax`,
		`docs/a.md: "tool group": "group" is not a command that runs (tool group has leaf)`,
		`docs/a.md: "tool run extra": tool run: unknown command "extra" for "tool run"`,
	}
	text := strings.ReplaceAll(err.Error(), dir+string(filepath.Separator), "")
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("no %q in\n%s", w, text)
		}
	}
	if got := strings.Count(text, "\n"+"docs/") + strings.Count(text, "README.md:") + strings.Count(text, "found "); got != len(want) {
		t.Errorf("%d errors, want %d:\n%s", got, len(want), text)
	}
}
