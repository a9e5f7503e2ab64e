package frontend

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestReadAll checks the Content-Length-sized body reader against
// io.ReadAll for honest, short, long and missing lengths, and that the
// body limit still fails with *http.MaxBytesError.
func TestReadAll(t *testing.T) {
	body := strings.Repeat("0123456789", 300) // 3000 bytes
	for _, tc := range []struct {
		name  string
		cl    int64
		limit int64
		err   bool
	}{
		{"exact", 3000, 1 << 20, false},
		{"unknown", -1, 1 << 20, false},
		{"short claim", 10, 1 << 20, false},
		{"long claim", 9000, 1 << 20, false},
		{"over limit, honest", 3000, 1000, true},
		{"over limit, short claim", 100, 1000, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			r := http.MaxBytesReader(w, io.NopCloser(strings.NewReader(body)), tc.limit)
			got, err := readAll(r, tc.cl, tc.limit)
			var mbe *http.MaxBytesError
			if tc.err {
				if !errors.As(err, &mbe) {
					t.Fatalf("err = %v, want *http.MaxBytesError", err)
				}
				return
			}
			if err != nil || !bytes.Equal(got, []byte(body)) {
				t.Fatalf("got %d bytes, err %v; want the %d-byte body", len(got), err, len(body))
			}
		})
	}
}

func BenchmarkReadAll(b *testing.B) {
	body := []byte(strings.Repeat("1234567, ", 256))
	for _, sized := range []bool{false, true} {
		name := "io.ReadAll"
		if sized {
			name = "sized"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				cl := int64(-1)
				if sized {
					cl = int64(len(body))
				}
				if _, err := readAll(bytes.NewReader(body), cl, 1<<20); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
