package lint

import (
	"strings"
	"testing"
)

// heavyDep says why a binary that serves requests may not link importPath,
// or "": the Kubernetes client and gRPC stack belong to kvrouter-epp, the
// plotting library (12 embedded fonts) to kvrouter-study.
func heavyDep(importPath string) string {
	switch {
	case strings.HasPrefix(importPath, "k8s.io/"), strings.HasPrefix(importPath, "sigs.k8s.io/"):
		return "Kubernetes: belongs to kvrouter-epp"
	case importPath == "google.golang.org/grpc" || strings.HasPrefix(importPath, "google.golang.org/grpc/"):
		return "gRPC: belongs to kvrouter-epp"
	case strings.HasPrefix(importPath, "github.com/envoyproxy/"):
		return "Envoy ext_proc: belongs to kvrouter-epp"
	case strings.HasPrefix(importPath, "gonum.org/"):
		return "plotting: belongs to kvrouter-study"
	}
	return ""
}

// plotDep is heavyDep restricted to the plotting code, which the endpoint
// picker does not need either.
func plotDep(importPath string) string {
	if strings.HasPrefix(importPath, "gonum.org/") {
		return heavyDep(importPath)
	}
	return ""
}

// TestBinariesAreLean: the kvrouter binary (serve, up, mocker, bridge,
// events, hash) links no Kubernetes, gRPC, Envoy or plotting package
// through any chain of imports, and kvrouter-epp no plotting package.
// Before the split, cmd/kvrouter linked ~800 non-standard packages (123
// MiB); one import of internal/epp or of a charting file from a package
// the runtimes use brings them back.
func TestBinariesAreLean(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list; skipped with -short")
	}
	const mod = "github.com/kvrouter/kvrouter/"
	binaries := map[string]func(string) string{
		mod + "cmd/kvrouter":     heavyDep,
		mod + "cmd/kvrouter-epp": plotDep,
	}
	var pkgs []string
	for p := range binaries {
		pkgs = append(pkgs, p)
	}
	graph, err := goListDeps(moduleRoot(t), buildTags(), pkgs...)
	if err != nil {
		t.Fatal(err)
	}
	for p, forbidden := range binaries {
		if _, ok := graph[p]; !ok {
			t.Errorf("go list did not list %s", p)
		}
		chains := forbiddenPaths(graph, p, nil, forbidden)
		for i, chain := range chains {
			if i == 5 {
				t.Errorf("%s: and %d more", p, len(chains)-i)
				break
			}
			t.Errorf("%s links %s", p, chain)
		}
	}
}

// TestBinariesAreLeanCatchesViolations runs the check on a synthetic
// graph: a command that reaches gRPC and gonum through a runtime package.
func TestBinariesAreLeanCatchesViolations(t *testing.T) {
	graph := map[string][]string{
		"m/cmd/kvrouter": {"m/internal/app", "fmt"},
		"m/internal/app": {"m/internal/sim", "google.golang.org/grpc/codes"},
		"m/internal/sim": {"gonum.org/v1/plot"},
	}
	got := forbiddenPaths(graph, "m/cmd/kvrouter", nil, heavyDep)
	want := []string{
		"m/cmd/kvrouter -> m/internal/app -> google.golang.org/grpc/codes (gRPC: belongs to kvrouter-epp)",
		"m/cmd/kvrouter -> m/internal/app -> m/internal/sim -> gonum.org/v1/plot (plotting: belongs to kvrouter-study)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := forbiddenPaths(graph, "m/cmd/kvrouter", nil, plotDep); len(got) != 1 {
		t.Errorf("plotDep: got %q, want the gonum chain only", got)
	}
}
