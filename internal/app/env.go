package app

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/kvrouter/kvrouter/internal/clihelp"
	"github.com/spf13/pflag"
)

// notSettingEnv are KVROUTER_* variables (or prefixes ending in '_') that
// the repository's scripts and tests read and that are no flag: a shell
// that exports them still starts every command.
var notSettingEnv = []string{"KVROUTER_BENCH_", "KVROUTER_TOKENIZER_CACHE", "KVROUTER_SKIP_SIM"}

// notSettingFlags are flags of a command line that are no setting and so
// have no variable.
var notSettingFlags = map[string]bool{"help": true, clihelp.HelpAll: true, "print-config": true}

// CheckEnv refuses every EnvPrefix variable of environ ("NAME=value"
// entries, os.Environ's form) that names no flag of parsed, each error
// naming the closest variable that does: a mistyped or stale name would
// otherwise be ignored without a word.
func CheckEnv(parsed *pflag.FlagSet, environ []string) error {
	known := map[string]bool{}
	var flags []string
	parsed.VisitAll(func(f *pflag.Flag) {
		if !notSettingFlags[f.Name] {
			known[EnvName(f.Name)] = true
			flags = append(flags, f.Name)
		}
	})
	var errs []error
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, EnvPrefix) || known[name] || notSetting(name) {
			continue
		}
		msg := fmt.Sprintf("environment: %s names no flag of %q", name, parsed.Name())
		flag := strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(name, EnvPrefix), "_", "-"))
		if s := clihelp.Suggest(flag, flags); s != "" {
			msg += fmt.Sprintf(" (did you mean %s?)", EnvName(s))
		}
		errs = append(errs, errors.New(msg+"; unset it or fix its name"))
	}
	sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	return errors.Join(errs...)
}

func notSetting(name string) bool {
	for _, p := range notSettingEnv {
		if name == p || strings.HasSuffix(p, "_") && strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// envLookup looks a variable up in environ as os.LookupEnv does in the
// process environment (the last entry of a name wins, as getenv).
func envLookup(environ []string) func(string) (string, bool) {
	m := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}
