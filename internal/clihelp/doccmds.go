package clihelp

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/spf13/cobra"
)

// DocCommand is one command line, in a fenced block of a Markdown page,
// that runs a given binary.
type DocCommand struct {
	File string
	Line string   // as written, continuation lines joined
	Args []string // the words after the binary (or after `go run ./cmd/BIN`)
}

// DocCommands returns the command lines running binary bin in README.md
// and docs/**/*.md under the repository root: in fenced blocks `bin ...`,
// `./path/bin ...`, `go run ./cmd/bin ...`, after any VAR=value words, and
// each command of a `&&`, `;` or `|` chain (a comment or a redirection
// ends a command); in the prose, code spans that start with bin or go run.
// docs/experiments is left out: its records quote commands as they ran at
// a named commit.
func DocCommands(root, bin string) ([]DocCommand, error) {
	files := []string{filepath.Join(root, "README.md")}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && d.Name() == "experiments" {
			return filepath.SkipDir
		}
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("clihelp: docs: %w", err)
	}
	var out []DocCommand
	for _, f := range files {
		lines, err := codeLines(f)
		if err != nil {
			return nil, err
		}
		for _, line := range lines {
			for _, words := range shellCommands(strings.ReplaceAll(line, `\|`, "|")) {
				if args, ok := invocation(words, bin); ok && len(args) > 0 {
					out = append(out, DocCommand{File: f, Line: line, Args: args})
				}
			}
		}
	}
	return out, nil
}

// invocation returns the arguments words passes to bin, if the command
// words runs bin.
func invocation(words []string, bin string) ([]string, bool) {
	for len(words) > 0 && (strings.Contains(words[0], "=") && !strings.HasPrefix(words[0], "-") || words[0] == "$") {
		words = words[1:] // KVROUTER_X=1, a "$ " prompt
	}
	if len(words) >= 3 && words[0] == "go" && words[1] == "run" {
		words = words[2:]
		for len(words) > 0 && strings.HasPrefix(words[0], "-") {
			words = words[1:] // go run -race ./cmd/x
		}
	}
	if len(words) == 0 {
		return nil, false
	}
	prog, _, _ := strings.Cut(path.Base(words[0]), "@") // .../cmd/kvrouter@latest
	if prog != bin {
		return nil, false
	}
	return words[1:], true
}

// ParseDocCommand reports whether args (a DocCommand's) name a runnable
// command of the tree newRoot builds and parse with that command's flags
// and argument rule. Docs write templates, so a placeholder value in capitals
// (--worker-id N, --nats URL) is taken as valid for any flag, a flag last
// on the line without its value (prose naming `mocker --role`) is taken as
// named only, brackets around an optional word are dropped, and so are
// --help and --help-all (the help tests cover them).
func ParseDocCommand(newRoot func() *cobra.Command, args []string) error {
	var keep []string
	for _, a := range args {
		a = strings.TrimSuffix(strings.Trim(a, "[]"), "...")
		if a != "" && a != "--help" && a != "--"+HelpAll {
			keep = append(keep, a)
		}
	}
	if len(keep) == 0 {
		return nil // `kvrouter-study ...`: the binary, named
	}
	root := newRoot()
	sub, rest, err := root.Find(keep)
	if err != nil {
		return fmt.Errorf("no such command: %w", err)
	}
	if sub == root && root.HasSubCommands() || !sub.Runnable() {
		return fmt.Errorf("%q is not a command that runs (%s has %s)", strings.Join(keep, " "), sub.CommandPath(), subNames(sub))
	}
	if err := sub.ParseFlags(withoutPlaceholders(sub, rest)); err != nil {
		return fmt.Errorf("%s: %w", sub.CommandPath(), err)
	}
	if err := sub.ValidateArgs(sub.Flags().Args()); err != nil {
		return fmt.Errorf("%s: %w", sub.CommandPath(), err)
	}
	return nil
}

var placeholder = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)

// withoutPlaceholders drops from args every known non-bool flag whose value
// is a placeholder (or missing, last on the line): its name is checked, a
// value cannot be.
func withoutPlaceholders(c *cobra.Command, args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		name, val, eq := strings.Cut(strings.TrimPrefix(args[i], "--"), "=")
		f := c.Flags().Lookup(name)
		if !strings.HasPrefix(args[i], "--") || f == nil || f.Value.Type() == "bool" {
			out = append(out, args[i])
			continue
		}
		if !eq {
			if i+1 == len(args) {
				continue // named, not set
			}
			val = args[i+1]
		}
		if placeholder.MatchString(val) {
			if !eq {
				i++
			}
			continue
		}
		out = append(out, args[i])
	}
	return out
}

func subNames(c *cobra.Command) string {
	var names []string
	for _, s := range c.Commands() {
		names = append(names, s.Name())
	}
	if len(names) == 0 {
		return "no subcommands"
	}
	return strings.Join(names, ", ")
}

// CheckDocCommands parses every command line of the docs under root that
// runs newRoot's binary (ParseDocCommand) and returns every failure,
// naming the file and line; fewer than atLeast lines found is a failure
// too (the docs' examples moved out of reach).
func CheckDocCommands(root string, newRoot func() *cobra.Command, atLeast int) error {
	cmds, err := DocCommands(root, newRoot().Name())
	if err != nil {
		return err
	}
	var errs []error
	if len(cmds) < atLeast {
		errs = append(errs, fmt.Errorf("found %d command lines of %s, want at least %d", len(cmds), newRoot().Name(), atLeast))
	}
	for _, c := range cmds {
		if err := ParseDocCommand(newRoot, c.Args); err != nil {
			errs = append(errs, fmt.Errorf("%s: %q: %w", c.File, c.Line, err))
		}
	}
	return errors.Join(errs...)
}

// codeLines returns the lines inside ``` blocks of a Markdown file,
// continuation lines (ending in a backslash) joined, then the code spans
// of the prose, a span broken over lines joined.
func codeLines(file string) ([]string, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("clihelp: %w", err)
	}
	defer f.Close()
	var out []string
	in, cur := false, ""
	var prose strings.Builder
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			in = !in
			continue
		}
		if !in {
			prose.WriteString(line + " ")
			continue
		}
		if s, ok := strings.CutSuffix(strings.TrimRight(line, " "), "\\"); ok {
			cur += s + " "
			continue
		}
		out = append(out, strings.TrimSpace(cur+line))
		cur = ""
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("clihelp: %s: %w", file, err)
	}
	for _, m := range codeSpan.FindAllStringSubmatch(prose.String(), -1) {
		out = append(out, strings.TrimSpace(m[1]))
	}
	return out, nil
}

var codeSpan = regexp.MustCompile("`([^`]+)`")

// shellCommands splits a shell line into commands of words: quotes group,
// `&&`, `||`, `;` and `|` separate commands, and a comment or a
// redirection ends the line (what follows a redirection is a file).
func shellCommands(line string) [][]string {
	var cmds [][]string
	var words []string
	var w strings.Builder
	inWord := false
	var quote byte
	endWord := func() {
		if inWord {
			words = append(words, w.String())
			w.Reset()
			inWord = false
		}
	}
	endCmd := func() {
		endWord()
		if len(words) > 0 {
			cmds = append(cmds, words)
		}
		words = nil
	}
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			} else {
				w.WriteByte(c)
			}
		case c == '\'' || c == '"':
			quote, inWord = c, true
		case c == ' ' || c == '\t':
			endWord()
		case c == '|' || c == ';' || c == '&':
			endCmd()
		case c == '>' || c == '<':
			if strings.Trim(w.String(), "0123456789") == "" {
				w.Reset() // the 2 of 2>&1
				inWord = false
			}
			endCmd()
			return cmds
		case !inWord && c == '#':
			endCmd()
			return cmds
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	endCmd()
	return cmds
}

// CheckDefaults reports every flag of defaults that c lacks, and every
// default that differs from the one the docs state ("" = any default):
// the docs' promise about a flag, kept by each command's test.
func CheckDefaults(c *cobra.Command, defaults map[string]string) error {
	var errs []error
	names := make([]string, 0, len(defaults))
	for n := range defaults {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		f := c.Flags().Lookup(name)
		switch {
		case f == nil:
			errs = append(errs, fmt.Errorf("%s has no --%s", c.Name(), name))
		case defaults[name] != "" && f.DefValue != defaults[name]:
			errs = append(errs, fmt.Errorf("%s --%s defaults to %q, the docs say %q", c.Name(), name, f.DefValue, defaults[name]))
		}
	}
	return errors.Join(errs...)
}
