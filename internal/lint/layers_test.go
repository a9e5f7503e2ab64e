package lint

import (
	"strings"
	"testing"
)

// layerBans lists, per shell package, the packages it may not reach
// through any chain of imports, each with its reason. The production
// runtime (internal/app: serve, mocker, up) links no study code: the
// simulator, replay and benchmark libraries belong to kvrouter-study, and
// what both need (spec parsers, engine and router configuration) lives in
// the packages it configures.
var layerBans = map[string][]layerBan{
	"internal/app": {
		{"internal/sim", "the simulator is study code"},
		{"internal/replay", "trace replay is study code"},
		{"internal/benchindex", "benchmarks are study code"},
		{"internal/benchevents", "benchmarks are study code"},
	},
}

// layerBan forbids a package and everything under it.
type layerBan struct{ pkg, why string }

// banned returns the ban function of bans for forbiddenPaths: the reason
// importPath (under module mod) is forbidden, or "".
func banned(mod string, bans []layerBan) func(string) string {
	return func(importPath string) string {
		rel, ok := strings.CutPrefix(importPath, mod)
		if !ok {
			return ""
		}
		for _, b := range bans {
			if rel == b.pkg || strings.HasPrefix(rel, b.pkg+"/") {
				return b.why
			}
		}
		return ""
	}
}

// TestLayerDeps checks layerBans against the module's import graph.
func TestLayerDeps(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list; skipped with -short")
	}
	const mod = "github.com/kvrouter/kvrouter/"
	var pkgs []string
	for p := range layerBans {
		pkgs = append(pkgs, mod+p)
	}
	graph, err := goListDeps(moduleRoot(t), buildTags(), pkgs...)
	if err != nil {
		t.Fatal(err)
	}
	for p, bans := range layerBans {
		if _, ok := graph[mod+p]; !ok {
			t.Errorf("go list did not list %s", p)
		}
		for _, chain := range forbiddenPaths(graph, mod+p, nil, banned(mod, bans)) {
			t.Errorf("%s depends on a forbidden package: %s", p, chain)
		}
	}
}

// TestLayerDepsCatchesViolations feeds the check a graph where the
// runtime reaches the simulator through a helper, and one where it does
// not (a package whose name only starts like a banned one is allowed).
func TestLayerDepsCatchesViolations(t *testing.T) {
	const mod = "example.com/m/"
	bans := []layerBan{{"internal/sim", "study"}}
	graph := map[string][]string{
		mod + "internal/app":    {mod + "internal/fleet", "fmt"},
		mod + "internal/fleet":  {mod + "internal/sim/x", mod + "internal/simple"},
		mod + "internal/sim/x":  {"fmt"},
		mod + "internal/simple": nil,
	}
	got := forbiddenPaths(graph, mod+"internal/app", nil, banned(mod, bans))
	want := mod + "internal/app -> " + mod + "internal/fleet -> " + mod + "internal/sim/x (study)"
	if len(got) != 1 || got[0] != want {
		t.Errorf("got %q, want [%q]", got, want)
	}
	graph[mod+"internal/fleet"] = []string{mod + "internal/simple"}
	if got := forbiddenPaths(graph, mod+"internal/app", nil, banned(mod, bans)); len(got) != 0 {
		t.Errorf("clean graph: got %q", got)
	}
}
