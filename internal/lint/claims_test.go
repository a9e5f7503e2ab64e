package lint

import (
	"fmt"
	"go/ast"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// claimToken is, in a CLAIMS.md bullet, a package note "(`a`, `b`...",
// a bare package before a test "`pkg` `TestX`", a test or fuzz target, or
// a ";".
var claimToken = regexp.MustCompile("\\(((?:`[^`]+`(?:, )?)+)|`([^`]+)`\\s+`((?:Test|Fuzz)[A-Za-z0-9_]+)`|`((?:Test|Fuzz)[A-Za-z0-9_]+)`|;")

var codeSpan = regexp.MustCompile("`([^`]+)`")

// claimProblems reads CLAIMS.md's bullets and returns every test or fuzz
// target placed in packages none of which defines it. A test belongs to
// the package note that follows it, "(`pkg`, `pkg2`...)", or, after a bare
// "`pkg` `TestX`" up to the next ";", to that package. tests maps a
// package directory (slash-separated, module-relative) to its test and
// fuzz functions.
func claimProblems(claims string, tests map[string]map[string]bool) []string {
	var out []string
	check := func(pkgs []string, name, bullet string) {
		for _, p := range pkgs {
			if tests[p][name] {
				return
			}
		}
		var in []string
		for p, names := range tests {
			if names[name] {
				in = append(in, p)
			}
		}
		slices.Sort(in)
		out = append(out, fmt.Sprintf("%s is placed in %v but defined in %v: %.70s...", name, pkgs, in, bullet))
	}
	for _, b := range regexp.MustCompile(`\n(?:- |#)`).Split(claims, -1) {
		b = strings.ReplaceAll(b, "\n", " ")
		var pending, cur []string
		for _, m := range claimToken.FindAllStringSubmatch(b, -1) {
			switch {
			case m[0] == ";":
				cur = nil
			case m[1] != "":
				var pkgs []string
				for _, p := range codeSpan.FindAllStringSubmatch(m[1], -1) {
					if tests[p[1]] != nil {
						pkgs = append(pkgs, p[1])
					}
				}
				if len(pkgs) > 0 {
					for _, name := range pending {
						check(pkgs, name, b)
					}
					pending = nil
				}
			default:
				name := m[3] + m[4]
				if tests[m[2]] != nil {
					cur = []string{m[2]}
				}
				if cur != nil {
					check(cur, name, b)
				} else {
					pending = append(pending, name)
				}
			}
		}
	}
	return out
}

// TestClaimsPackages: each test docs/CLAIMS.md places in a package
// (`go test ./PKG -run NAME`) is defined there, so the map stays true when
// tests move between packages (TestDocTestNames only checks that the name
// exists somewhere).
func TestClaimsPackages(t *testing.T) {
	root := moduleRoot(t)
	tests := map[string]map[string]bool{}
	for _, gf := range walk(t, root, ".") {
		if !strings.HasSuffix(gf.rel, "_test.go") {
			continue
		}
		pkg := path.Dir(gf.rel)
		if tests[pkg] == nil {
			tests[pkg] = map[string]bool{}
		}
		for _, d := range gf.file.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil &&
				(strings.HasPrefix(fd.Name.Name, "Test") || strings.HasPrefix(fd.Name.Name, "Fuzz")) {
				tests[pkg][fd.Name.Name] = true
			}
		}
	}
	b, err := os.ReadFile(filepath.Join(root, "docs", "CLAIMS.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range claimProblems(string(b), tests) {
		t.Error(p)
	}
}

func TestClaimsPackagesCatchesViolations(t *testing.T) {
	tests := map[string]map[string]bool{
		"internal/sim": {"TestSimSeeds": true, "TestJudgeSeeds": true},
		"cmd/kvrouter": {"TestServePreset": true},
		"router":       {"TestDataDriven": true, "TestFinishesSlotWait": true},
	}
	claims := "## x\n\n- sim: `TestSimSeeds`\n  (`cmd/kvrouter`), `TestJudgeSeeds` (`internal/sim`).\n" +
		"- `router` `TestDataDriven` (`predict`), `TestFinishesSlotWait`; `TestServePreset` (`cmd/kvrouter`).\n" +
		"- `router` `TestServePreset`.\n"
	got := claimProblems(claims, tests)
	if len(got) != 2 || !strings.HasPrefix(got[0], "TestSimSeeds is placed in [cmd/kvrouter] but defined in [internal/sim]") ||
		!strings.HasPrefix(got[1], "TestServePreset is placed in [router] but defined in [cmd/kvrouter]") {
		t.Errorf("got %q", got)
	}
}
