package traces

import (
	"path/filepath"
	"reflect"
	"testing"

	"github.com/kvrouter/kvrouter/trace"
)

// TestWriteFileRoundTrip: what WriteFile writes, plain or gzip, Load reads
// back as the same records.
func TestWriteFileRoundTrip(t *testing.T) {
	recs, err := Load("synth")
	if err != nil {
		t.Fatal(err)
	}
	recs = recs[:50]
	for _, name := range []string{"t.jsonl", "t.jsonl.gz"} {
		path := filepath.Join(t.TempDir(), name)
		if err := WriteFile(path, recs); err != nil {
			t.Fatal(err)
		}
		got, err := Load(path)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(got, recs) {
			t.Fatalf("%s: read back %d records, differ from the %d written", name, len(got), len(recs))
		}
	}
	if err := WriteFile(filepath.Join(t.TempDir(), "missing", "t.jsonl"), []trace.Record{}); err == nil {
		t.Fatal("no error for a missing directory")
	}
}
