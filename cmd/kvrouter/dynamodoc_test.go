package main

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/kvrouter/kvrouter/internal/app"
)

// dynamoDocRow is one row of a table in docs/dynamo-migration.md: the
// backticked names of its kvrouter column and its kvrouter default.
type dynamoDocRow struct {
	line    int
	names   []string
	deflt   string // backticked default, "" when the cell is prose
	dynamo  string
	ncolumn int
}

var backticked = regexp.MustCompile("`([^`]+)`")

// readDynamoDoc returns the table rows of the migration page whose
// kvrouter column names something.
func readDynamoDoc(t *testing.T) []dynamoDocRow {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "docs", "dynamo-migration.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []dynamoDocRow
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| Dynamo flag") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), " | ")
		row := dynamoDocRow{line: n, ncolumn: len(cells), dynamo: strings.TrimSpace(cells[0])}
		if len(cells) == 6 {
			for _, m := range backticked.FindAllStringSubmatch(cells[3], -1) {
				row.names = append(row.names, m[1])
			}
			if m := backticked.FindAllStringSubmatch(cells[4], -1); len(m) == 1 && strings.TrimSpace(cells[4]) == "`"+m[0][1]+"`" {
				row.deflt = m[0][1]
			}
		}
		rows = append(rows, row)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return rows
}

// yamlHas reports whether the dotted path names a key of the printed
// config.
func yamlHas(tree map[string]any, path string) bool {
	var node any = tree
	for _, k := range strings.Split(path, ".") {
		m, ok := node.(map[string]any)
		if !ok {
			return false
		}
		if node, ok = m[k]; !ok {
			return false
		}
	}
	return true
}

// TestDynamoMigrationDoc: every kvrouter flag, KVROUTER_* variable and
// YAML key docs/dynamo-migration.md names in its tables exists in serve,
// each variable is the one a flag of its row binds, and each backticked
// kvrouter default is the flag's default; every row has six columns.
func TestDynamoMigrationDoc(t *testing.T) {
	cmd := newServeCmd()
	_, printed := printConfig(t, "serve", "--no-nats")
	var tree map[string]any
	if err := yaml.Unmarshal([]byte(printed), &tree); err != nil {
		t.Fatal(err)
	}
	rows := readDynamoDoc(t)
	if len(rows) < 40 {
		t.Fatalf("%d table rows, want the flag tables", len(rows))
	}
	checked := 0
	for _, r := range rows {
		if r.ncolumn != 6 {
			t.Errorf("line %d: %d columns, want 6", r.line, r.ncolumn)
			continue
		}
		var flags []string
		for _, name := range r.names {
			if rest, ok := strings.CutPrefix(name, "--"); ok {
				flags = append(flags, strings.Fields(rest)[0])
			}
		}
		for _, name := range r.names {
			switch {
			case strings.HasPrefix(name, "--"):
				fl := strings.Fields(name[2:])[0]
				if cmd.Flags().Lookup(fl) == nil {
					t.Errorf("line %d (%s): serve has no --%s", r.line, r.dynamo, fl)
				}
			case strings.HasPrefix(name, app.EnvPrefix):
				ok := false
				for _, fl := range flags {
					ok = ok || app.EnvName(fl) == name
				}
				if !ok {
					t.Errorf("line %d (%s): %s is the variable of none of %v", r.line, r.dynamo, name, flags)
				}
			default:
				if !yamlHas(tree, name) {
					t.Errorf("line %d (%s): the config has no key %s", r.line, r.dynamo, name)
				}
			}
			checked++
		}
		if r.deflt != "" && len(flags) > 0 {
			if f := cmd.Flags().Lookup(flags[0]); f != nil && f.DefValue != r.deflt {
				t.Errorf("line %d (%s): --%s defaults to %q, the page says %q", r.line, r.dynamo, flags[0], f.DefValue, r.deflt)
			}
		}
	}
	if checked < 80 {
		t.Errorf("checked %d names, want the tables' kvrouter column", checked)
	}
}
