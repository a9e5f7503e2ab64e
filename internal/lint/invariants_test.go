package lint

import (
	"go/parser"
	"go/token"
	"slices"
	"strings"
	"testing"
)

const invariantsPkg = "github.com/kvrouter/kvrouter/internal/invariants"

// invariantGated are the core packages whose self-checks must be compiled
// in by -tags invariants (STYLE.md "Invariants"), and whether one of their
// tests must also refer to the gate (a test that proves the gate fires).
var invariantGated = map[string]bool{"indexer": false, "loads": false, "mocker": true}

// usesGate reports whether f refers to invariants.Enabled.
func usesGate(gf goFile) bool {
	return slices.Contains(selectors(gf.file, invariantsPkg), "Enabled")
}

// gateProblems returns what is missing for a package whose files are gfs.
func gateProblems(gfs []goFile, needTest bool) []string {
	var code, test bool
	for _, gf := range gfs {
		if !usesGate(gf) {
			continue
		}
		if strings.HasSuffix(gf.rel, "_test.go") {
			test = true
		} else {
			code = true
		}
	}
	var out []string
	if !code {
		out = append(out, "no self-check gated by invariants.Enabled")
	}
	if needTest && !test {
		out = append(out, "no test refers to invariants.Enabled (one must show the gate fires)")
	}
	return out
}

func TestInvariantGates(t *testing.T) {
	root := moduleRoot(t)
	for pkg, needTest := range invariantGated {
		var gfs []goFile
		for _, gf := range walk(t, root, pkg) {
			if strings.Count(gf.rel, "/") == 1 { // the package itself, not sub-packages
				gfs = append(gfs, gf)
			}
		}
		for _, p := range gateProblems(gfs, needTest) {
			t.Errorf("%s: %s", pkg, p)
		}
	}
}

func TestInvariantGatesCatchViolations(t *testing.T) {
	parse := func(name, src string) goFile {
		f, err := parser.ParseFile(token.NewFileSet(), name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		return goFile{rel: name, file: f}
	}
	gated := parse("x/a.go", `package x
import "github.com/kvrouter/kvrouter/internal/invariants"
func f() { if invariants.Enabled { panic(1) } }`)
	plain := parse("x/b.go", "package x\nfunc g() {}\n")
	test := parse("x/a_test.go", `package x
import inv "github.com/kvrouter/kvrouter/internal/invariants"
var _ = inv.Enabled`)
	if got := gateProblems([]goFile{plain}, false); len(got) != 1 {
		t.Errorf("ungated package: %q, want one problem", got)
	}
	if got := gateProblems([]goFile{gated, plain}, true); len(got) != 1 {
		t.Errorf("gated package without a gate test: %q, want one problem", got)
	}
	if got := gateProblems([]goFile{gated, plain, test}, true); len(got) != 0 {
		t.Errorf("gated and tested: %q, want none", got)
	}
}
