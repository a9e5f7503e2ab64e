package lint

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestREADMEDependencies: the README's dependency table lists exactly the
// direct requirements of go.mod, each pinned to an exact version, and the
// one it calls test-only is imported by test files only.
func TestREADMEDependencies(t *testing.T) {
	root := moduleRoot(t)
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	exact := regexp.MustCompile(`^v\d+\.\d+\.\d+$`)
	var direct []string
	inRequire := false
	for _, line := range strings.Split(string(mod), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "require (":
			inRequire = true
			continue
		case line == ")":
			inRequire = false
			continue
		case strings.HasPrefix(line, "require "):
			line = strings.TrimPrefix(line, "require ")
		case !inRequire:
			continue
		}
		f := strings.Fields(line)
		if len(f) < 2 || strings.Contains(line, "// indirect") {
			continue
		}
		if !exact.MatchString(f[1]) {
			t.Errorf("go.mod: %s %s is not an exact release version", f[0], f[1])
		}
		direct = append(direct, f[0])
	}

	readme, err := os.Open(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer readme.Close()
	var listed []string
	testOnly := map[string]bool{}
	tick := regexp.MustCompile("`([^`]+)`")
	inDeps := false
	sc := bufio.NewScanner(readme)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			inDeps = line == "## Dependencies"
			continue
		}
		if !inDeps || !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(line, "|")
		for _, m := range tick.FindAllStringSubmatch(cells[1], -1) {
			name := m[1]
			if !strings.Contains(name, ".") { // "spf13/pflag" shorthand
				name = "github.com/" + name
			}
			listed = append(listed, name)
			if strings.Contains(cells[2], "test-only") {
				testOnly[name] = true
			}
		}
	}
	slices.Sort(direct)
	slices.Sort(listed)
	if !slices.Equal(direct, listed) {
		t.Errorf("README dependencies %v\n differ from go.mod's direct requirements %v", listed, direct)
	}
	if len(testOnly) == 0 {
		t.Fatal("README names no test-only dependency; update this test")
	}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root {
			if _, e := os.Stat(filepath.Join(path, "go.mod")); e == nil || strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir // another module (bench/peers) or hidden
			}
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for m := range testOnly {
			if strings.Contains(string(b), `"`+m) {
				t.Errorf("%s imports test-only %s", path, m)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestDocTestNames: every test and fuzz target that README.md or a page
// under docs/ names (`TestX`, `FuzzX`: the proof of a claim, mapped in
// docs/CLAIMS.md) exists as such a function in the module.
func TestDocTestNames(t *testing.T) {
	root := moduleRoot(t)
	files := []string{filepath.Join(root, "README.md")}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(files, filepath.Join(root, "docs", "CLAIMS.md")) {
		t.Fatal("docs/CLAIMS.md is missing: it maps each claim of the docs to its tests")
	}
	named := map[string][]string{} // name -> files naming it
	ref := regexp.MustCompile("`((?:Test|Fuzz)[A-Za-z0-9_]+)`")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, f)
		for _, m := range ref.FindAllStringSubmatch(string(b), -1) {
			if !slices.Contains(named[m[1]], rel) {
				named[m[1]] = append(named[m[1]], rel)
			}
		}
	}
	if len(named) == 0 {
		t.Fatal("the docs name no test")
	}
	found := map[string]bool{}
	decl := regexp.MustCompile(`(?m)^func ((?:Test[A-Za-z0-9_]+\(t \*testing\.T)|(?:Fuzz[A-Za-z0-9_]+\(f \*testing\.F))\)`)
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range decl.FindAllSubmatch(b, -1) {
			name, _, _ := strings.Cut(string(m[1]), "(")
			found[name] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, in := range named {
		if !found[name] {
			t.Errorf("%s names %s, which is no test or fuzz function", strings.Join(in, ", "), name)
		}
	}
}

// TestREADMECitesNoTests: the README is the manual; which test shows which
// claim is docs/CLAIMS.md's job, so the README names no test function.
func TestREADMECitesNoTests(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(moduleRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if m := regexp.MustCompile("`(?:Test|Fuzz)[A-Z][A-Za-z0-9_]*`").FindAllString(string(b), -1); len(m) > 0 {
		t.Errorf("README.md names %d tests (first %s); map claims to tests in docs/CLAIMS.md", len(m), m[0])
	}
}
