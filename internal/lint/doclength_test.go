package lint

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A package doc states the contract (what the package does, its
// invariants, whether it is safe for concurrent use) with at most a few
// measured NB: lines per choice; records of what was tried go to
// docs/experiments/<topic>.md. The README is the user's manual; the
// claims-to-tests map lives in docs/CLAIMS.md. These caps keep both from
// growing back into lab notebooks.
const (
	maxDocLines    = 150 // every package's doc.go
	maxREADMELines = 400 // the module root's README.md
)

// lineCount counts src's lines, a last line without a newline included.
func lineCount(src []byte) int {
	n := bytes.Count(src, []byte("\n"))
	if len(src) > 0 && src[len(src)-1] != '\n' {
		n++
	}
	return n
}

// docLengths returns a problem for every doc.go under root longer than
// maxDocLines (skipping testdata, nested modules and hidden directories,
// as parseTree does) and, apart, one for root's README.md if it is longer
// than maxREADMELines ("" when it is within the cap or absent).
func docLengths(root string) (docs []string, readme string, err error) {
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return skipDir(root, path, d)
		}
		if d.Name() != "doc.go" {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if n := lineCount(src); n > maxDocLines {
			rel, _ := filepath.Rel(root, path)
			docs = append(docs, fmt.Sprintf("%s: %d lines, over the %d-line cap for a package doc "+
				"(state the contract; move experiment records to docs/experiments/)",
				filepath.ToSlash(rel), n, maxDocLines))
		}
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	src, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil && !os.IsNotExist(err) {
		return nil, "", err
	}
	if n := lineCount(src); n > maxREADMELines {
		readme = fmt.Sprintf("README.md: %d lines, over the %d-line cap "+
			"(the manual says what a user does; claims and their tests go to docs/CLAIMS.md)",
			n, maxREADMELines)
	}
	return docs, readme, nil
}

// TestDocLength: every package's doc.go is at most maxDocLines lines.
func TestDocLength(t *testing.T) {
	docs, _, err := docLengths(moduleRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range docs {
		t.Error(p)
	}
}

// TestREADMELength: the README is at most maxREADMELines lines. Apart
// from TestDocLength so that a failure names which half of the rule broke.
func TestREADMELength(t *testing.T) {
	_, readme, err := docLengths(moduleRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	if readme != "" {
		t.Error(readme)
	}
}

// TestDocLengthCatchesViolations runs docLengths on a synthetic tree: a
// doc.go and a README one line over their caps are reported, files at the
// caps and doc.go files in testdata, hidden directories and nested
// modules are not.
func TestDocLengthCatchesViolations(t *testing.T) {
	lines := func(n int) string { return strings.Repeat("// x\n", n) }
	write := func(root, rel, body string) {
		t.Helper()
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	bad := t.TempDir()
	write(bad, "go.mod", "module example.com/bad\n")
	write(bad, "long/doc.go", lines(maxDocLines)+"package long\n")
	write(bad, "deep/er/doc.go", lines(maxDocLines+40)+"package er") // no final newline
	write(bad, "fits/doc.go", lines(maxDocLines-1)+"package fits\n")
	write(bad, "long/testdata/doc.go", lines(2*maxDocLines))
	write(bad, ".hidden/doc.go", lines(2*maxDocLines))
	write(bad, "nested/go.mod", "module example.com/nested\n")
	write(bad, "nested/doc.go", lines(2*maxDocLines))
	write(bad, "README.md", strings.Repeat("text\n", maxREADMELines+1))
	docs, readme, err := docLengths(bad)
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 2 || !strings.HasPrefix(docs[0], "deep/er/doc.go: 191 lines") ||
		!strings.HasPrefix(docs[1], "long/doc.go: 151 lines") {
		t.Errorf("doc.go problems = %q, want deep/er/doc.go (191 lines) and long/doc.go (151 lines)", docs)
	}
	if !strings.HasPrefix(readme, "README.md: 401 lines") {
		t.Errorf("README problem = %q, want 401 lines reported", readme)
	}

	good := t.TempDir()
	write(good, "go.mod", "module example.com/good\n")
	write(good, "a/doc.go", lines(maxDocLines-1)+"package a\n")
	write(good, "README.md", strings.Repeat("text\n", maxREADMELines))
	docs, readme, err = docLengths(good)
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 0 || readme != "" {
		t.Errorf("good tree reported: %q, %q", docs, readme)
	}
	if _, readme, _ := docLengths(t.TempDir()); readme != "" {
		t.Errorf("absent README reported: %q", readme)
	}
}

// experimentsLink matches an index line's link to a record: "- [x.md](x.md): ...".
var experimentsLink = regexp.MustCompile(`(?m)^- \[([^\]]+)\]\(([^)]+)\): \S`)

// experimentsIndex compares dir's README.md with the records in dir: every
// record has one index line whose link text and target are its file name,
// and every line names a record that exists.
func experimentsIndex(dir string) ([]string, error) {
	index, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	records := map[string]bool{}
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".md") && e.Name() != "README.md" {
			records[e.Name()] = false
		}
	}
	var problems []string
	for _, m := range experimentsLink.FindAllStringSubmatch(string(index), -1) {
		name, target := m[1], m[2]
		switch listed, ok := records[target]; {
		case name != target:
			problems = append(problems, fmt.Sprintf("index links %q as %q: name the file", target, name))
		case !ok:
			problems = append(problems, fmt.Sprintf("index lists %s, which is no record here", target))
		case listed:
			problems = append(problems, fmt.Sprintf("index lists %s twice", target))
		default:
			records[target] = true
		}
	}
	for _, name := range sortedKeys(records) {
		if !records[name] {
			problems = append(problems, fmt.Sprintf("%s is not in README.md (add \"- [%s](%s): what it records\")", name, name, name))
		}
	}
	return problems, nil
}

// TestExperimentsIndex: docs/experiments/README.md lists every record
// there, one line each, and nothing else.
func TestExperimentsIndex(t *testing.T) {
	problems, err := experimentsIndex(filepath.Join(moduleRoot(t), "docs", "experiments"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error("docs/experiments: " + p)
	}
}

// TestExperimentsIndexCatchesViolations: a record missing from the index,
// a line naming no record and a duplicate line are each reported.
func TestExperimentsIndexCatchesViolations(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"README.md": "# Experiment records\n\n- [a.md](a.md): listed.\n- [gone.md](gone.md): no such file.\n" +
			"- [a.md](a.md): twice.\n",
		"a.md":        "# a\n",
		"unlisted.md": "# unlisted\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := experimentsIndex(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"lists gone.md", "lists a.md twice", "unlisted.md is not in README.md"}
	if len(got) != len(want) {
		t.Fatalf("problems = %q, want %d matching %q", got, len(want), want)
	}
	for i, w := range want {
		if !strings.Contains(got[i], w) {
			t.Errorf("problem %d = %q, want it to contain %q", i, got[i], w)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("- [a.md](a.md): a.\n- [unlisted.md](unlisted.md): u.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := experimentsIndex(dir); err != nil || len(got) != 0 {
		t.Errorf("good index: %q, %v", got, err)
	}
}
