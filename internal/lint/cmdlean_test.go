package lint

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
	"testing"
)

// maxCmdFuncLines caps a function in cmd/ (STYLE.md: cmd/ binds flags and
// nothing else). Binding a command's flags, its help text aside, fits in
// it; a longer function is carrying logic that belongs in a library.
const maxCmdFuncLines = 100

// cmdProblems lists what keeps f, a non-test file of a cmd/ package, from
// being lean: a function over maxCmdFuncLines lines, or a type other than
// a struct of a command's options (named ...Options). Report types, their
// writers and helpers live beside the library that makes the report.
func cmdProblems(fset *token.FileSet, f *ast.File, name string) []string {
	var out []string
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			n := fset.Position(d.End()).Line - fset.Position(d.Pos()).Line + 1
			if n > maxCmdFuncLines {
				out = append(out, fmt.Sprintf("%s:%d: %s is %d lines, over %d: move its logic to a library",
					name, fset.Position(d.Pos()).Line, funcName(d), n, maxCmdFuncLines))
			}
		case *ast.GenDecl:
			if d.Tok != token.TYPE {
				continue
			}
			for _, spec := range d.Specs {
				ts := spec.(*ast.TypeSpec)
				if _, isStruct := ts.Type.(*ast.StructType); isStruct && strings.HasSuffix(ts.Name.Name, "Options") {
					continue
				}
				out = append(out, fmt.Sprintf("%s:%d: type %s: cmd/ declares only option structs (...Options)",
					name, fset.Position(ts.Pos()).Line, ts.Name.Name))
			}
		}
	}
	return out
}

// TestCmdLean applies cmdProblems to every non-test file under cmd/.
func TestCmdLean(t *testing.T) {
	root := moduleRoot(t)
	n := 0
	for _, gf := range walk(t, root, "cmd") {
		if strings.HasSuffix(gf.rel, "_test.go") {
			continue
		}
		n++
		for _, p := range cmdProblems(gf.fset, gf.file, gf.rel) {
			t.Error(p)
		}
	}
	if n == 0 {
		t.Fatal("no cmd/ files found")
	}
}

// TestCmdLeanCatches: the rule flags a long function and a report type,
// and passes an options struct and a short function.
func TestCmdLeanCatches(t *testing.T) {
	src := "package main\n\ntype simOptions struct{ n int }\n\ntype report struct{ n int }\n\ntype list []int\n\n" +
		"func short() {}\n\nfunc long() {\n" + strings.Repeat("\t_ = 1\n", maxCmdFuncLines-1) + "}\n"
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "x.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(cmdProblems(fset, f, "x.go"), "\n")
	for _, want := range []string{"type report", "type list", fmt.Sprintf("long is %d lines", maxCmdFuncLines+1)} {
		if !strings.Contains(got, want) {
			t.Errorf("problems lack %q:\n%s", want, got)
		}
	}
	for _, ok := range []string{"simOptions", "short"} {
		if strings.Contains(got, ok) {
			t.Errorf("problems flag %s:\n%s", ok, got)
		}
	}
	// One line shorter is within the cap.
	src = "package main\n\nfunc long() {\n" + strings.Repeat("\t_ = 1\n", maxCmdFuncLines-2) + "}\n"
	if f, err = parser.ParseFile(fset, "y.go", src, 0); err != nil {
		t.Fatal(err)
	}
	if p := cmdProblems(fset, f, "y.go"); len(p) != 0 {
		t.Errorf("a %d-line function flagged: %v", maxCmdFuncLines, p)
	}
}
