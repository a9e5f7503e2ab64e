package zmqsub

import (
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"
)

func TestBatchTime(t *testing.T) {
	want := time.Unix(1_700_000_000, 250_000_000)
	for _, tc := range []struct {
		name string
		v    any
		want time.Time
		ok   bool
	}{
		{"float64", []any{1_700_000_000.25, []any{}, 0}, want, true},
		{"float32 seconds", []any{float32(1024.5), []any{}}, time.Unix(1024, 500_000_000), true},
		{"uint", []any{uint32(1_700_000_000), []any{}}, time.Unix(1_700_000_000, 0), true},
		{"int64", []any{int64(1_700_000_000), []any{}}, time.Unix(1_700_000_000, 0), true},
		{"map form", map[string]any{"ts": 1.5}, time.Time{}, false},
		{"string ts", []any{"x", []any{}}, time.Time{}, false},
		{"negative", []any{-1.0, []any{}}, time.Time{}, false},
	} {
		b, err := msgpack.Marshal(tc.v)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := BatchTime(b)
		if ok != tc.ok || !got.Equal(tc.want) {
			t.Errorf("%s: BatchTime = %v, %v; want %v, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
	if _, ok := BatchTime(nil); ok {
		t.Error("empty payload has a time")
	}
}

func FuzzBatchTime(f *testing.F) {
	b, _ := msgpack.Marshal([]any{1_700_000_000.25, []any{}, 0})
	f.Add(b)
	f.Add([]byte{0x93, 0xcb})
	f.Fuzz(func(t *testing.T, p []byte) {
		if ts, ok := BatchTime(p); ok && ts.IsZero() {
			t.Fatal("ok with zero time")
		}
	})
}
