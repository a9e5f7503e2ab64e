package lint

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// corePackages must stay pure (STYLE.md "Core vs shell").
var corePackages = []string{"kvhash", "kvevents", "indexer", "loads", "selector", "queue", "affinity", "router", "mocker"}

// forbiddenImports may not be imported by core code. Checked on direct
// imports: fmt pulls in os transitively, which is harmless.
var forbiddenImports = []string{"net", "net/http", "os", "log", "log/slog"}

// forbiddenPrefixes may not be imported by core code at all.
var forbiddenPrefixes = []string{"github.com/prometheus/", "github.com/nats-io/", "github.com/go-zeromq/"}

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
	rel  string
	file *ast.File
}

// walk parses every .go file under root/sub, skipping testdata, nested
// modules and hidden directories.
func walk(t *testing.T, root, sub string) []goFile {
	t.Helper()
	var out []goFile
	fset := token.NewFileSet()
	base := filepath.Join(root, sub)
	if _, err := os.Stat(base); err != nil {
		return nil
	}
	err := filepath.WalkDir(base, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != base && (name == "testdata" || strings.HasPrefix(name, ".")) {
				return filepath.SkipDir
			}
			if path != root {
				if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
					return filepath.SkipDir
				}
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		out = append(out, goFile{rel: rel, file: f})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
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
				for _, bad := range forbiddenImports {
					if p == bad {
						t.Errorf("%s: core package imports %q", gf.rel, p)
					}
				}
				for _, bad := range forbiddenPrefixes {
					if strings.HasPrefix(p, bad) {
						t.Errorf("%s: core package imports %q", gf.rel, p)
					}
				}
			}
			for _, name := range selectors(gf.file, "time") {
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
		if strings.HasSuffix(gf.rel, "_test.go") || strings.HasPrefix(gf.rel, "cmd"+string(filepath.Separator)) {
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
