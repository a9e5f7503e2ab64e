package clihelp

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

var helpFlagLine = regexp.MustCompile(`(?m)^\s+(?:-\w, )?--([a-z0-9-]+)`)

// listed returns the flags a help text lists and its section headings.
func listed(text string) (flags, sections []string) {
	for _, line := range strings.Split(text, "\n") {
		if m := helpFlagLine.FindStringSubmatch(line); m != nil {
			flags = append(flags, m[1])
		} else if strings.HasSuffix(line, ":") && !strings.HasPrefix(line, " ") {
			sections = append(sections, strings.TrimSuffix(line, ":"))
		}
	}
	return flags, sections
}

// Verify runs the command at path under a fresh root with --help and with
// --help-all, and reports where the output breaks h's contract: --help
// lists exactly the Shown flags (a dozen or two), under the sections that
// have them, with a footer counting the rest; --help-all lists every flag
// and none under "Other". Commands' tests call it.
func Verify(newRoot func() *cobra.Command, path []string, h Help) error {
	run := func(arg string) (string, *cobra.Command, error) {
		root := newRoot()
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&out)
		root.SetArgs(append(append([]string{}, path...), arg))
		c, err := root.ExecuteC()
		return out.String(), c, err
	}
	var errs []error
	var shown, names []string
	for _, s := range h.Sections {
		if s.Shown != "" {
			names = append(names, s.Name)
		}
		shown = append(shown, strings.Fields(s.Shown)...)
	}
	text, c, err := run("--help")
	if err != nil {
		return fmt.Errorf("%v --help: %w", path, err)
	}
	flags, sections := listed(text)
	if strings.Join(flags, " ") != strings.Join(shown, " ") {
		errs = append(errs, fmt.Errorf("--help lists\n  %v\nwant\n  %v", flags, shown))
	}
	if n := len(flags); n < 8 || n > 25 {
		errs = append(errs, fmt.Errorf("--help lists %d flags, want a dozen or two", n))
	}
	if len(sections) < len(names) || strings.Join(sections[len(sections)-len(names):], "|") != strings.Join(names, "|") {
		errs = append(errs, fmt.Errorf("--help sections %q, want %q last", sections, names))
	}
	var total int
	c.Flags().VisitAll(func(f *pflag.Flag) {
		if !notSetting(f.Name) {
			total++
		}
	})
	if want := "--help-all prints " + strconv.Itoa(total-len(shown)) + " more flags"; !strings.Contains(text, want) {
		errs = append(errs, fmt.Errorf("--help: no %q in\n%s", want, text))
	}
	all, _, err := run("--" + HelpAll)
	if err != nil {
		return fmt.Errorf("%v --%s: %w", path, HelpAll, err)
	}
	flags, sections = listed(all)
	if len(flags) != total {
		errs = append(errs, fmt.Errorf("--help-all lists %d flags, want every one (%d)", len(flags), total))
	}
	for _, s := range sections {
		if s == "Other" {
			errs = append(errs, fmt.Errorf("--help-all has flags in no section:\n%s", all))
		}
	}
	return errors.Join(errs...)
}
