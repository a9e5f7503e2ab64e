package lint

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kvrouter/kvrouter/internal/invariants"
)

// forbiddenDep says why a core package may not depend on importPath, even
// transitively, or returns "". These are the packages that mean sockets,
// processes, signals, structured logging or metrics; none of them is pulled
// in by the standard library's pure packages (fmt, encoding/json, ...), so
// a transitive ban is meaningful. net/url and net/netip are pure value
// types (the gonja template engine uses them) and stay allowed.
func forbiddenDep(importPath string) string {
	switch {
	case importPath == "net", importPath == "net/rpc", importPath == "net/smtp":
		return "network I/O"
	case importPath == "net/http" || strings.HasPrefix(importPath, "net/http/"):
		return "network I/O"
	case importPath == "os/exec", importPath == "os/signal", importPath == "plugin":
		return "process control"
	case importPath == "log/slog":
		return "logging: the shell logs"
	case importPath == "expvar", importPath == "runtime/pprof":
		return "metrics: the shell exports them"
	case strings.HasPrefix(importPath, "github.com/prometheus/"):
		return "metrics: the shell exports them"
	case strings.HasPrefix(importPath, "github.com/nats-io/"), strings.HasPrefix(importPath, "github.com/go-zeromq/"):
		return "transport: lives under internal/eventplane"
	}
	return ""
}

// exemptVia are third-party packages whose own imports are not followed:
// the core uses a pure part of them and never calls the part that needs
// the forbidden package. Each needs a reason; the list should stay short.
var exemptVia = map[string]string{
	// tokenizer uses NewCoreBPE/NewTiktoken with ranks parsed from
	// tokenizer.json; the package's BPE-file loader (net/http) is never called.
	"github.com/pkoukk/tiktoken-go": "tokenizer uses only its BPE core, not its HTTP loader",
	// pulled by gonja's template builtins; net is used only for v1 UUIDs
	// (MAC address), which chat templates never ask for.
	"github.com/google/uuid": "gonja builtins; only v1 UUIDs touch net",
}

// listedPackage is the part of `go list -json` output the check reads.
type listedPackage struct {
	ImportPath string
	Imports    []string
	Standard   bool
}

// goListDeps runs `go list -deps -json` in dir on pkgs and returns the
// import graph: every package reached, with its direct imports.
func goListDeps(dir string, tags string, pkgs ...string) (map[string][]string, error) {
	args := []string{"list", "-deps", "-json=ImportPath,Imports,Standard"}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	cmd := exec.Command("go", append(args, pkgs...)...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w\n%s", err, stderr.String())
	}
	graph := map[string][]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go list output: %w", err)
		}
		graph[p.ImportPath] = p.Imports
	}
	return graph, nil
}

// forbiddenPaths walks graph from root (breadth first, so each reported
// chain is a shortest one) and returns one import chain per package reached
// that ban names a reason for, not following exempt packages' imports.
func forbiddenPaths(graph map[string][]string, root string, exempt map[string]string, ban func(string) string) []string {
	parent := map[string]string{root: ""}
	queue := []string{root}
	var out []string
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if why := ban(p); why != "" {
			var chain []string
			for x := p; x != ""; x = parent[x] {
				chain = append(chain, x)
			}
			slices.Reverse(chain)
			out = append(out, fmt.Sprintf("%s (%s)", strings.Join(chain, " -> "), why))
			continue
		}
		if _, ok := exempt[p]; ok {
			continue
		}
		for _, q := range graph[p] {
			if _, seen := parent[q]; !seen {
				parent[q] = p
				queue = append(queue, q)
			}
		}
	}
	return out
}

// buildTags are the tags this test binary was built with that change the
// core's imports (the invariant build adds self-checks).
func buildTags() string {
	if invariants.Enabled {
		return "invariants"
	}
	return ""
}

// TestCoreDeps checks the core's whole dependency graph, as the linker
// sees it: a core package must not reach the network, processes, slog,
// metrics or the transports through any chain of imports.
func TestCoreDeps(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list; skipped with -short")
	}
	root := moduleRoot(t)
	const mod = "github.com/kvrouter/kvrouter/"
	pkgs := []string{mod + "indexer/indexertest"}
	for _, p := range corePackages {
		pkgs = append(pkgs, mod+p)
	}
	graph, err := goListDeps(root, buildTags(), pkgs...)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pkgs {
		if _, ok := graph[p]; !ok {
			t.Errorf("go list did not list %s", p)
		}
		for _, chain := range forbiddenPaths(graph, p, exemptVia, forbiddenDep) {
			t.Errorf("core package depends on a forbidden package: %s", chain)
		}
	}
}

// TestCoreDepsCatchesViolations runs the same check on a scratch module
// whose "core" package reaches net/http through a helper package, and on
// a synthetic graph with an exempt package.
func TestCoreDepsCatchesViolations(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list; skipped with -short")
	}
	dir := t.TempDir()
	files := map[string]string{
		"go.mod":        "module example.com/bad\n\ngo 1.22\n",
		"core/core.go":  "package core\n\nimport _ \"example.com/bad/helper\"\n",
		"helper/h.go":   "package helper\n\nimport _ \"net/http\"\n",
		"clean/c.go":    "package clean\n\nimport _ \"fmt\"\n",
		"logger/log.go": "package logger\n\nimport _ \"log/slog\"\n",
	}
	for name, src := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	graph, err := goListDeps(dir, "", "./core", "./clean", "./logger")
	if err != nil {
		t.Fatal(err)
	}
	got := forbiddenPaths(graph, "example.com/bad/core", nil, forbiddenDep)
	want := "example.com/bad/core -> example.com/bad/helper -> net/http (network I/O)"
	if len(got) != 1 || got[0] != want {
		t.Errorf("core: got %q, want [%q]", got, want)
	}
	// fmt reaches os, which is not banned transitively.
	if got := forbiddenPaths(graph, "example.com/bad/clean", nil, forbiddenDep); len(got) != 0 {
		t.Errorf("clean: got %q, want none", got)
	}
	if got := forbiddenPaths(graph, "example.com/bad/logger", nil, forbiddenDep); len(got) != 1 {
		t.Errorf("logger: got %q, want one slog chain", got)
	}
	// An exempt package's imports are not followed.
	if got := forbiddenPaths(graph, "example.com/bad/core", map[string]string{"example.com/bad/helper": "test"}, forbiddenDep); len(got) != 0 {
		t.Errorf("exempt helper: got %q, want none", got)
	}
}

// engineMayNotReach lists, per simulated-engine package, the router
// packages it must not depend on: the mocker is an engine the router talks
// to over the wire, so it shares only the wire types (internal/oai).
var engineMayNotReach = map[string][]string{
	"mocker":           {"internal/frontend", "router", "selector"},
	"internal/mockerd": {"internal/frontend", "router", "selector"},
}

// reachedUnder returns the packages in graph reachable from root whose
// import path is prefix or lies under it, sorted.
func reachedUnder(graph map[string][]string, root, prefix string) []string {
	seen := map[string]bool{root: true}
	queue := []string{root}
	var out []string
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if p == prefix || strings.HasPrefix(p, prefix+"/") {
			out = append(out, p)
		}
		for _, q := range graph[p] {
			if !seen[q] {
				seen[q] = true
				queue = append(queue, q)
			}
		}
	}
	slices.Sort(out)
	return out
}

// TestEngineDoesNotImportRouter checks that the simulated engine builds
// without the router's frontend, router or selector.
func TestEngineDoesNotImportRouter(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list; skipped with -short")
	}
	const mod = "github.com/kvrouter/kvrouter/"
	var pkgs []string
	for p := range engineMayNotReach {
		pkgs = append(pkgs, mod+p)
	}
	slices.Sort(pkgs)
	graph, err := goListDeps(moduleRoot(t), buildTags(), pkgs...)
	if err != nil {
		t.Fatal(err)
	}
	for p, banned := range engineMayNotReach {
		for _, b := range banned {
			if got := reachedUnder(graph, mod+p, mod+b); len(got) > 0 {
				t.Errorf("%s depends on %v; the engine may share only wire types with the router", p, got)
			}
		}
	}
}

// TestReachedUnder: the walk finds a package under the prefix through a
// chain, and not a package that only shares the prefix's spelling.
func TestReachedUnder(t *testing.T) {
	graph := map[string][]string{
		"m/engine":   {"m/shared", "m/frontendx"},
		"m/shared":   {"m/frontend/oai"},
		"m/frontend": {"m/engine"},
	}
	if got := reachedUnder(graph, "m/engine", "m/frontend"); !slices.Equal(got, []string{"m/frontend/oai"}) {
		t.Errorf("got %q, want [m/frontend/oai]", got)
	}
	if got := reachedUnder(graph, "m/shared", "m/engine"); len(got) != 0 {
		t.Errorf("got %q, want none", got)
	}
}
