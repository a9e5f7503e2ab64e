package replay

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestBenchReportWriteText prints fixed reports and compares them with
// testdata/benchtext/*.txt, which the printer in cmd/kvrouter-study wrote
// before it moved here: the move changed no byte.
func TestBenchReportWriteText(t *testing.T) {
	for _, name := range []string{"floor", "met", "auto"} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join("testdata", "benchtext")
			data, err := os.ReadFile(filepath.Join(dir, name+".json"))
			if err != nil {
				t.Fatal(err)
			}
			var rep BenchReport
			if err := json.Unmarshal(data, &rep); err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(filepath.Join(dir, name+".txt"))
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			if err := rep.WriteText(&got); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want) {
				t.Fatalf("got\n%s\nwant\n%s", got.Bytes(), want)
			}
		})
	}
}
