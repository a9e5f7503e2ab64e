package clihelp

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// HelpAll is the flag that prints every flag.
const HelpAll = "help-all"

// Section is one named group of a command's flags. Names are flag names
// without dashes, separated by white space, in the order shown.
type Section struct {
	Name string
	// Shown are the flags --help prints: what a first deployment sets.
	Shown string
	// More are the flags only --help-all prints.
	More string
}

// Help is a command's help declaration.
type Help struct {
	// EnvPrefix, when set, is the prefix of the environment variable of
	// every flag (app.EnvPrefix; the footer explains the mapping). ""
	// for a command that reads no environment.
	EnvPrefix string
	Sections  []Section
	// Renamed maps a flag name that is gone to the one that replaced it:
	// using the old name fails naming the new one.
	Renamed map[string]string
}

// Apply gives c the sectioned --help, the --help-all flag and the
// did-you-mean flag errors of h. Call it after every flag is bound.
func Apply(c *cobra.Command, h Help) {
	c.Flags().Bool(HelpAll, false, "print every flag, in sections")
	c.SetHelpFunc(func(cmd *cobra.Command, _ []string) {
		_ = h.Write(cmd.OutOrStdout(), cmd, false)
	})
	c.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return flagError(cmd, err, h.Renamed)
	})
	run, runE := c.Run, c.RunE
	c.Run = nil
	c.RunE = func(cmd *cobra.Command, args []string) error {
		if all, _ := cmd.Flags().GetBool(HelpAll); all {
			return h.Write(cmd.OutOrStdout(), cmd, true)
		}
		if runE != nil {
			return runE(cmd, args)
		}
		if run != nil {
			run(cmd, args)
		}
		return nil
	}
}

// notSetting reports the flags every command has that are in no section.
func notSetting(name string) bool { return name == "help" || name == HelpAll }

// Write prints c's help: with all every flag, else the Shown ones and a
// footer counting the others.
func (h Help) Write(w io.Writer, c *cobra.Command, all bool) error {
	var b strings.Builder
	desc := c.Long
	if desc == "" {
		desc = c.Short
	}
	fmt.Fprintf(&b, "%s\n\nUsage:\n  %s\n", strings.TrimSpace(desc), c.UseLine())
	if c.Example != "" {
		fmt.Fprintf(&b, "\nExamples:\n%s\n", c.Example)
	}
	listed := map[string]bool{}
	left, example := 0, ""
	section := func(name string, flags []*pflag.Flag) {
		if len(flags) == 0 {
			return
		}
		fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
		fs.SortFlags = false
		for _, f := range flags {
			fs.AddFlag(f)
		}
		fmt.Fprintf(&b, "\n%s:\n%s", name, fs.FlagUsages())
	}
	for _, s := range h.Sections {
		shown := lookup(c, s.Shown, listed)
		more := lookup(c, s.More, listed)
		for _, f := range shown {
			if example == "" && strings.Contains(f.Name, "-") {
				example = f.Name
			}
		}
		if all {
			shown = append(shown, more...)
		} else {
			left += len(more)
		}
		section(s.Name, shown)
	}
	var other []*pflag.Flag
	c.Flags().VisitAll(func(f *pflag.Flag) {
		if !listed[f.Name] && !f.Hidden && !notSetting(f.Name) {
			other = append(other, f)
		}
	})
	if all {
		section("Other", other)
	} else {
		left += len(other)
	}
	b.WriteString("\n")
	if !all && left > 0 {
		fmt.Fprintf(&b, "--%s prints %d more flags (every flag, in these sections).\n", HelpAll, left)
	}
	if h.EnvPrefix != "" {
		if example == "" {
			example = "log-level"
		}
		fmt.Fprintf(&b, "Every flag is also the environment variable %s<FLAG>: the name upper-cased, '-' as '_'\n"+
			"  (--%s: %s; a list's items separated by spaces).\n"+
			"A %s* variable that names no flag is an error.\n",
			h.EnvPrefix, example, EnvName(h.EnvPrefix, example), h.EnvPrefix)
		if c.Flags().Lookup("config") != nil {
			b.WriteString("Every setting is also a key of the YAML file --config reads (unknown keys are errors)")
			if c.Flags().Lookup("print-config") != nil {
				b.WriteString(",\nin the shape --print-config prints")
			}
			b.WriteString(".\nPrecedence: flag > environment > file > default.\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// EnvName is the variable of flag under prefix: the name upper-cased with
// '-' as '_' (the mapping app.EnvName applies).
func EnvName(prefix, flag string) string {
	return prefix + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// lookup returns c's flags among names that are not hidden, marking them
// in listed; names that are no flag of c are skipped (Check reports them).
func lookup(c *cobra.Command, names string, listed map[string]bool) []*pflag.Flag {
	var out []*pflag.Flag
	for _, n := range strings.Fields(names) {
		if f := c.Flags().Lookup(n); f != nil && !f.Hidden && !listed[n] {
			listed[n] = true
			out = append(out, f)
		}
	}
	return out
}

// Check reports every flag of c that no section lists and every name the
// sections list that is no flag of c (or that two sections list), joined.
func (h Help) Check(c *cobra.Command) error {
	var errs []error
	seen := map[string]string{}
	for _, s := range h.Sections {
		for _, n := range strings.Fields(s.Shown + " " + s.More) {
			if prev, dup := seen[n]; dup {
				errs = append(errs, fmt.Errorf("%s: --%s listed in %q and %q", c.Name(), n, prev, s.Name))
			}
			seen[n] = s.Name
			if c.Flags().Lookup(n) == nil {
				errs = append(errs, fmt.Errorf("%s: section %q lists --%s, which is no flag of the command", c.Name(), s.Name, n))
			}
		}
	}
	c.Flags().VisitAll(func(f *pflag.Flag) {
		if _, ok := seen[f.Name]; !ok && !f.Hidden && !notSetting(f.Name) {
			errs = append(errs, fmt.Errorf("%s: --%s is in no help section", c.Name(), f.Name))
		}
	})
	return errors.Join(errs...)
}

// FlagError is a cobra flag error function (Command.SetFlagErrorFunc)
// that adds to an unknown long flag the closest flag of the command:
// "unknown flag: --worker-url (did you mean --worker?)". On a command
// without sections, whose --help already lists every flag, --help-all
// prints that help instead of failing: users learn it on serve and try it
// everywhere.
func FlagError(c *cobra.Command, err error) error { return flagError(c, err, nil) }

func flagError(c *cobra.Command, err error, renamed map[string]string) error {
	var ne *pflag.NotExistError
	if !errors.As(err, &ne) || ne.GetSpecifiedShortnames() != "" {
		return err
	}
	name := ne.GetSpecifiedName()
	if now, ok := renamed[name]; ok {
		return fmt.Errorf("--%s is now --%s", name, now)
	}
	if name == HelpAll {
		return c.Help()
	}
	var names []string
	c.Flags().VisitAll(func(f *pflag.Flag) {
		if !f.Hidden {
			names = append(names, f.Name)
		}
	})
	if s := Suggest(name, names); s != "" {
		return fmt.Errorf("%w (did you mean --%s?)", err, s)
	}
	return err
}

// Reshow returns a copy of sections in which exactly the flags named in
// shown are Shown, each staying in its section (in Shown then More order):
// for a command that binds another's flags but needs others first.
func Reshow(sections []Section, shown string) []Section {
	want := map[string]bool{}
	for _, n := range strings.Fields(shown) {
		want[n] = true
	}
	out := make([]Section, len(sections))
	for i, s := range sections {
		var sh, more []string
		for _, n := range strings.Fields(s.Shown + " " + s.More) {
			if want[n] {
				sh = append(sh, n)
			} else {
				more = append(more, n)
			}
		}
		out[i] = Section{Name: s.Name, Shown: strings.Join(sh, " "), More: strings.Join(more, " ")}
	}
	return out
}
