package bounds

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestStoreFitsAndGauges(t *testing.T) {
	a := New("sessions", 2, 100)
	b := New("bookings", 0, 10)
	if !a.Fits(2, 100) || a.Fits(3, 0) || a.Fits(0, 101) {
		t.Fatalf("Fits on an empty store with limits 2 entries, 100 bytes")
	}
	a.Add(2, 60)
	if a.Fits(1, 0) || !a.Fits(0, 40) || a.Fits(0, 41) {
		t.Fatalf("Fits after 2 entries, 60 bytes")
	}
	if !b.Fits(1000, 10) || b.Fits(0, 11) {
		t.Fatalf("a zero entry limit is no limit; the byte limit holds")
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(a, b) // two stores on one registry: distinct const labels
	want := `
# HELP kvrouter_store_entries Entries a bounded per-client store holds now.
# TYPE kvrouter_store_entries gauge
kvrouter_store_entries{store="bookings"} 0
kvrouter_store_entries{store="sessions"} 2
# HELP kvrouter_store_limit_bytes A bounded store's limit in bytes (0: none).
# TYPE kvrouter_store_limit_bytes gauge
kvrouter_store_limit_bytes{store="bookings"} 10
kvrouter_store_limit_bytes{store="sessions"} 100
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"kvrouter_store_entries", "kvrouter_store_limit_bytes"); err != nil {
		t.Fatal(err)
	}
	a.Add(-1, -50)
	if n, by := a.Size(); n != 1 || by != 10 {
		t.Fatalf("Size = %d, %d; want 1, 10", n, by)
	}
}
