package lint

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// goAllowed names the one core function that may start goroutines: the
// sticky writers of indexer.Concurrent, started by Run(ctx) (STYLE.md:
// constructors start nothing; long-lived work lives in Run).
var goAllowed = map[string]string{"indexer/concurrent.go": "Concurrent.Run"}

// funcName is "Recv.Name" for methods and "Name" for functions.
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	typ := fd.Recv.List[0].Type
	for {
		switch x := typ.(type) {
		case *ast.StarExpr:
			typ = x.X
			continue
		case *ast.IndexExpr: // generic receiver T[K]
			typ = x.X
			continue
		case *ast.IndexListExpr:
			typ = x.X
			continue
		case *ast.Ident:
			return x.Name + "." + fd.Name.Name
		}
		return fd.Name.Name
	}
}

// goStatements returns "file:line in Func" for every go statement of f
// outside the allowed function (allowed may be "").
func goStatements(fset *token.FileSet, f *ast.File, allowed string) []string {
	var out []string
	report := func(n ast.Node, in string) {
		pos := fset.Position(n.Pos())
		out = append(out, fmt.Sprintf("%s:%d in %s", pos.Filename, pos.Line, in))
	}
	for _, decl := range f.Decls {
		in := "package scope"
		if fd, ok := decl.(*ast.FuncDecl); ok {
			in = funcName(fd)
		}
		if in == allowed && allowed != "" {
			continue
		}
		ast.Inspect(decl, func(n ast.Node) bool {
			if g, ok := n.(*ast.GoStmt); ok {
				report(g, in)
			}
			return true
		})
	}
	return out
}

// TestCoreStartsNoGoroutines: core code starts no goroutines (the raft
// rule); the shell's Run(ctx) does, under an errgroup. Tests may.
func TestCoreStartsNoGoroutines(t *testing.T) {
	root := moduleRoot(t)
	for _, pkg := range corePackages {
		for _, gf := range walk(t, root, pkg) {
			if strings.HasSuffix(gf.rel, "_test.go") {
				continue
			}
			for _, at := range goStatements(gf.fset, gf.file, goAllowed[gf.rel]) {
				at = strings.TrimPrefix(filepath.ToSlash(at), filepath.ToSlash(root)+"/")
				t.Errorf("%s: go statement in a core package (only indexer.Concurrent.Run may start goroutines)", at)
			}
		}
	}
}

func TestGoStatementsCatchesViolations(t *testing.T) {
	src := `package x

type Concurrent struct{}

func (c *Concurrent) Run() { go func() {}() }

func (c *Concurrent) stop() {
	go c.Run()
}

var _ = func() { go println() }
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "x.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := goStatements(fset, f, "Concurrent.Run")
	want := []string{"x.go:8 in Concurrent.stop", "x.go:11 in package scope"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("goStatements = %q, want %q", got, want)
	}
	if got := goStatements(fset, f, ""); len(got) != 3 {
		t.Errorf("with nothing allowed: %q, want 3", got)
	}
}
