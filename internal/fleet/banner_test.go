package fleet

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestBannerWriteText compares the banner with testdata/banner-*.txt, the
// stdout of main's `kvrouter up --port 0` before the banner moved here
// (ports written as PORT): the move changed no byte.
func TestBannerWriteText(t *testing.T) {
	for _, c := range []struct {
		name string
		b    Banner
	}{
		{"plain", Banner{URL: "http://127.0.0.1:PORT", NATSURL: "nats://127.0.0.1:PORT", Workers: 2}},
		{"disagg", Banner{URL: "http://127.0.0.1:PORT", NATSURL: "nats://127.0.0.1:PORT", Workers: 2,
			Prefill: 1, Decode: 1, APIKey: "sekret"}},
	} {
		want, err := os.ReadFile(filepath.Join("testdata", "banner-"+c.name+".txt"))
		if err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		if err := c.b.WriteText(&got); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want) {
			t.Errorf("%s: got\n%s\nwant\n%s", c.name, got.Bytes(), want)
		}
	}
}
