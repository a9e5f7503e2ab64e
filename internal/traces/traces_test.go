package traces

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/kvrouter/kvrouter/trace"
)

func TestLoadShipped(t *testing.T) {
	want := map[string]int{"conversation": 12031, "synth": 4000, "azure-code": 8819, "azure-conv": 19366}
	for _, name := range Names {
		recs, err := Load(name)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != want[name] {
			t.Errorf("%s: %d records, want %d", name, len(recs), want[name])
		}
		for i, r := range recs {
			if len(r.HashIDs) != r.NumBlocks() {
				t.Fatalf("%s record %d: %d ids for %d tokens", name, i, len(r.HashIDs), r.InputLength)
			}
		}
	}
	def, err := Load("")
	if err != nil || len(def) != want[Default] {
		t.Errorf("default trace: %d records, %v", len(def), err)
	}
}

// Azure prefixes are synthesized deterministically, from a file too.
func TestLoadAzureFile(t *testing.T) {
	a, err := Load("azure-code")
	if err != nil {
		t.Fatal(err)
	}
	data, err := files.ReadFile("data/AzureLLMInferenceTrace_code.csv.gz")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "code.csv.gz")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(a, b, func(x, y trace.Record) bool { return slices.Equal(x.HashIDs, y.HashIDs) }) {
		t.Error("the same Azure trace got different prefixes")
	}
	if Short(p) != "code" || Short("synth") != "synth" || Short("") != Default {
		t.Errorf("Short: %q", Short(p))
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.jsonl")); err == nil {
		t.Error("missing file accepted")
	}
}
