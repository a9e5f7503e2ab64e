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

// TestREADMETestNames: every test README.md names (`TestX`, as the proof
// of a claim) exists as a test function in the module.
func TestREADMETestNames(t *testing.T) {
	root := moduleRoot(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	named := map[string]bool{}
	for _, m := range regexp.MustCompile("`(Test[A-Za-z0-9_]+)`").FindAllStringSubmatch(string(readme), -1) {
		named[m[1]] = false
	}
	if len(named) == 0 {
		t.Fatal("README names no test")
	}
	decl := regexp.MustCompile(`(?m)^func (Test[A-Za-z0-9_]+)\(t \*testing\.T\)`)
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
			if _, ok := named[string(m[1])]; ok {
				named[string(m[1])] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, found := range named {
		if !found {
			t.Errorf("README names %s, which is no test function", name)
		}
	}
}
