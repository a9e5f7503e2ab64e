package lint

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// corePackages must stay pure (STYLE.md "Core vs shell"): no I/O, no
// clock, no global rand, no goroutines, no logging or metrics.
//
// indexer/indexertest is a test-support package (the conformance suite and
// the differential reference run against every Index) but it is imported by
// the core's tests and by other modules' gateways' tests, so it is held to
// the same rules: it lives under indexer/ and is checked with it.
var corePackages = []string{"kvhash", "kvevents", "ordering", "indexer", "loads", "selector", "queue", "affinity", "router", "mocker", "trace", "tokenizer"}

// directOnly may not be imported directly by core code but may be reached
// transitively: fmt pulls in os, and msgpack and gonja pull in log, so a
// transitive ban on them would be meaningless (every core package would
// fail). What matters is that the core itself never opens files or logs.
var directOnly = []string{"os", "io/ioutil", "log"}

// osAllowed are the core files that may import os, each with the reason.
// Both are path-taking conveniences beside an io.Reader / []byte API.
var osAllowed = map[string]string{
	"trace/trace.go":  "trace.Open reads a trace file by path (Read takes an io.Reader)",
	"tokenizer/hf.go": "tokenizer.Load reads tokenizer.json from a model directory (FromJSON takes bytes)",
}

// clockAllowed are the core files that may use one clock function, each
// with the reason.
var clockAllowed = map[string]string{
	// strftime_now in HF chat templates renders today's date (Llama 3's
	// "Today Date:"); the engine renders with its clock, so must we for the
	// prompt to hash to the blocks it caches. Tests replace ChatTemplate.now.
	"tokenizer/chat.go": "Now",
}

// allowedRand are the math/rand(/v2) names that do not touch the global source.
var allowedRand = map[string]bool{
	"New": true, "NewPCG": true, "NewChaCha8": true, "NewSource": true, "NewZipf": true,
	"Rand": true, "Source": true, "PCG": true, "ChaCha8": true, "Zipf": true,
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found")
		}
		dir = parent
	}
}

type goFile struct {
	rel  string // slash-separated, relative to the module root
	file *ast.File
	fset *token.FileSet
}

var (
	treeOnce  sync.Once
	treeFiles []goFile
	treeErr   error
)

// walk returns every .go file under root/sub, skipping testdata, nested
// modules and hidden directories. The tree is parsed once per test binary.
func walk(t *testing.T, root, sub string) []goFile {
	t.Helper()
	treeOnce.Do(func() { treeFiles, treeErr = parseTree(root) })
	if treeErr != nil {
		t.Fatal(treeErr)
	}
	prefix := filepath.ToSlash(filepath.Clean(sub)) + "/"
	if prefix == "./" {
		return treeFiles
	}
	var out []goFile
	for _, gf := range treeFiles {
		if strings.HasPrefix(gf.rel, prefix) {
			out = append(out, gf)
		}
	}
	return out
}

func parseTree(root string) ([]goFile, error) {
	var out []goFile
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return skipDir(root, path, d)
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution|parser.ParseComments)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		out = append(out, goFile{rel: filepath.ToSlash(rel), file: f, fset: fset})
		return nil
	})
	return out, err
}

// skipDir is a WalkDir step for a directory of the module tree: it skips
// testdata, hidden directories and nested modules below root.
func skipDir(root, path string, d fs.DirEntry) error {
	name := d.Name()
	if path != root && (name == "testdata" || strings.HasPrefix(name, ".")) {
		return filepath.SkipDir
	}
	if path != root {
		if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
			return filepath.SkipDir
		}
	}
	return nil
}

func importName(imp *ast.ImportSpec) (path, name string) {
	path, _ = strconv.Unquote(imp.Path.Value)
	name = path[strings.LastIndex(path, "/")+1:]
	if name == "v2" {
		name = "rand" // math/rand/v2
	}
	if imp.Name != nil {
		name = imp.Name.Name
	}
	return path, name
}

// calls reports every pkg.Name selector in f whose package is imported from
// importPath.
func selectors(f *ast.File, importPath string) []string {
	local := ""
	for _, imp := range f.Imports {
		if p, n := importName(imp); p == importPath {
			local = n
		}
	}
	if local == "" {
		return nil
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if id, ok := sel.X.(*ast.Ident); ok && id.Name == local {
			out = append(out, sel.Sel.Name)
		}
		return true
	})
	return out
}

func TestCorePackagesArePure(t *testing.T) {
	root := moduleRoot(t)
	for _, pkg := range corePackages {
		for _, gf := range walk(t, root, pkg) {
			if strings.HasSuffix(gf.rel, "_test.go") {
				continue
			}
			for _, imp := range gf.file.Imports {
				p, _ := importName(imp)
				if why := forbiddenDep(p); why != "" {
					t.Errorf("%s: core package imports %q (%s)", gf.rel, p, why)
				}
				if slices.Contains(directOnly, p) && (p != "os" || osAllowed[gf.rel] == "") {
					t.Errorf("%s: core package imports %q directly (take an io.Reader/Writer or a *slog.Logger from the shell)", gf.rel, p)
				}
			}
			for _, name := range selectors(gf.file, "time") {
				if clockAllowed[gf.rel] == name {
					continue
				}
				if name == "Now" || name == "Sleep" || name == "Since" || name == "After" || name == "NewTimer" || name == "NewTicker" || name == "Tick" {
					t.Errorf("%s: core code calls time.%s (pass time in as a value)", gf.rel, name)
				}
			}
			for _, rp := range []string{"math/rand", "math/rand/v2"} {
				for _, name := range selectors(gf.file, rp) {
					if !allowedRand[name] {
						t.Errorf("%s: core code uses the global random source (%s.%s); inject a *rand.Rand", gf.rel, rp, name)
					}
				}
			}
		}
	}
}

func TestTestsDoNotSleep(t *testing.T) {
	root := moduleRoot(t)
	for _, gf := range walk(t, root, ".") {
		if !strings.HasSuffix(gf.rel, "_test.go") {
			continue
		}
		for _, name := range selectors(gf.file, "time") {
			if name == "Sleep" {
				t.Errorf("%s: test calls time.Sleep (wait on a condition or channel)", gf.rel)
			}
		}
	}
}

func TestOnlyCmdPrints(t *testing.T) {
	root := moduleRoot(t)
	for _, gf := range walk(t, root, ".") {
		if strings.HasSuffix(gf.rel, "_test.go") || strings.HasPrefix(gf.rel, "cmd/") {
			continue
		}
		for _, name := range selectors(gf.file, "fmt") {
			if name == "Print" || name == "Println" || name == "Printf" {
				t.Errorf("%s: fmt.%s outside cmd/ (write to an io.Writer that is passed in)", gf.rel, name)
			}
		}
	}
}

// TestLintCatchesViolations makes sure the checks above can fail.
func TestLintCatchesViolations(t *testing.T) {
	src := `package x
import (
	"time"
	r "math/rand/v2"
)
func f() { _ = time.Now(); _ = r.IntN(3); _ = r.New(r.NewPCG(1, 2)) }`
	f, err := parser.ParseFile(token.NewFileSet(), "x.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := selectors(f, "time"); len(got) != 1 || got[0] != "Now" {
		t.Fatalf("time selectors = %v", got)
	}
	var bad []string
	for _, n := range selectors(f, "math/rand/v2") {
		if !allowedRand[n] {
			bad = append(bad, n)
		}
	}
	if len(bad) != 1 || bad[0] != "IntN" {
		t.Fatalf("global rand uses = %v, want [IntN]", bad)
	}
}
