package benchevents

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/kvrouter/kvrouter/internal/eventplane"
)

// TestReportWriteText prints fixed reports and compares them with
// testdata/text/*.txt, which the printer in cmd/kvrouter-study wrote
// before it moved here: the move changed no byte.
func TestReportWriteText(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  Config
	}{
		{"unpaced", Config{Format: eventplane.FormatMsgpack, CatchUp: true}},
		{"paced", Config{Format: eventplane.FormatJSON}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join("testdata", "text")
			data, err := os.ReadFile(filepath.Join(dir, c.name+".json"))
			if err != nil {
				t.Fatal(err)
			}
			var r Report
			if err := json.Unmarshal(data, &r); err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(filepath.Join(dir, c.name+".txt"))
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			if err := r.WriteText(&got, c.cfg); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want) {
				t.Fatalf("got\n%s\nwant\n%s", got.Bytes(), want)
			}
		})
	}
}
