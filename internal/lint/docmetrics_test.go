package lint

import (
	"fmt"
	"go/ast"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// metricRef is a kvrouter_* name in a doc; a trailing _ (from
// `kvrouter_store_*` or `kvrouter_store_{entries,...}`) makes it a prefix.
var metricRef = regexp.MustCompile(`kvrouter_[a-z0-9_]*[a-z0-9_]`)

// docMetricProblems returns, for each doc (name -> text), every kvrouter_*
// name it cites that no string literal of the code is (or, for a prefix,
// starts with).
func docMetricProblems(docs map[string]string, literals []string) []string {
	var out []string
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range docs {
			if !yield(k) {
				return
			}
		}
	}) {
		seen := map[string]bool{}
		for _, ref := range metricRef.FindAllString(docs[name], -1) {
			if seen[ref] {
				continue
			}
			seen[ref] = true
			ok := slices.ContainsFunc(literals, func(lit string) bool {
				return lit == ref || strings.HasSuffix(ref, "_") && strings.HasPrefix(lit, ref)
			})
			if !ok {
				out = append(out, fmt.Sprintf("%s: %s is no metric (or NATS name) the code defines", name, ref))
			}
		}
	}
	return out
}

// codeLiterals returns the kvrouter_* string literals of the non-test
// files.
func codeLiterals(gfs []goFile) []string {
	var out []string
	for _, gf := range gfs {
		if strings.HasSuffix(gf.rel, "_test.go") {
			continue
		}
		ast.Inspect(gf.file, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if s, err := strconv.Unquote(lit.Value); err == nil && strings.HasPrefix(s, "kvrouter_") {
					out = append(out, s)
				}
			}
			return true
		})
	}
	return out
}

// TestDocMetricNames: every kvrouter_* metric README.md and docs/*.md cite
// (docs/experiments aside: records of past commits) is defined by the code,
// so a user grepping /metrics for it finds it once it is observed.
func TestDocMetricNames(t *testing.T) {
	root := moduleRoot(t)
	docs := map[string]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() && path != root && rel != "docs" {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			b, err := os.ReadFile(path)
			docs[filepath.ToSlash(rel)] = string(b)
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if docs["README.md"] == "" || docs["docs/operations.md"] == "" {
		t.Fatalf("README.md or docs/operations.md not found under %s", root)
	}
	for _, p := range docMetricProblems(docs, codeLiterals(walk(t, root, "."))) {
		t.Error(p)
	}
}

func TestDocMetricNamesCatchesViolations(t *testing.T) {
	docs := map[string]string{
		"README.md": "`kvrouter_ttft_seconds`, `kvrouter_store_*`, `kvrouter_store_{entries,bytes}`, `kvrouter_decisions_total`",
		"docs/x.md": "`kvrouter_disagg_*` and `kvrouter_ttft_second`",
	}
	got := docMetricProblems(docs, []string{"kvrouter_ttft_seconds", "kvrouter_store_entries"})
	want := []string{
		"README.md: kvrouter_decisions_total is no metric (or NATS name) the code defines",
		"docs/x.md: kvrouter_disagg_ is no metric (or NATS name) the code defines",
		"docs/x.md: kvrouter_ttft_second is no metric (or NATS name) the code defines",
	}
	if !slices.Equal(got, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
