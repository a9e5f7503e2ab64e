package router

import (
	"reflect"
	"testing"
)

func TestParsePools(t *testing.T) {
	for _, bad := range []string{"4", "0:4", "a:b", "4:-1", "4:2:1"} {
		if _, err := ParsePools(bad); err == nil {
			t.Errorf("ParsePools(%q) accepted", bad)
		}
	}
	p, err := ParsePools(" 6:2 ")
	if err != nil || p != (Pools{Prefill: 6, Decode: 2}) || p.String() != "6:2" {
		t.Fatalf("ParsePools(6:2) = %v, %v", p, err)
	}
	if p, err := ParsePools(""); err != nil || p.Enabled() || p.String() != "" {
		t.Fatalf("ParsePools(\"\") = %v, %v", p, err)
	}
}

func TestParseDisaggPolicies(t *testing.T) {
	got, err := ParseDisaggPolicies("always, isl,,isl-or-load")
	if want := []DisaggPolicy{DisaggAlways, DisaggISL, DisaggISLOrLoad}; err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, %v; want %v", got, err, want)
	}
	if got, err := ParseDisaggPolicies(""); err != nil || got != nil {
		t.Fatalf("empty: %v, %v", got, err)
	}
	if _, err := ParseDisaggPolicies("always,never"); err == nil {
		t.Fatal("never accepted")
	}
}

// The pools come from flags: any string is parsed without a panic, and an
// accepted one has two positive pools and round-trips through String.
func FuzzParsePools(f *testing.F) {
	for _, s := range []string{"", "6:2", "0:4", "1:1", "a:b", "9999999999999999999:1", "+3:2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePools(s)
		if err != nil || !p.Enabled() {
			return
		}
		if p.Prefill < 1 || p.Decode < 1 {
			t.Fatalf("%q: pools %+v", s, p)
		}
		if back, err := ParsePools(p.String()); err != nil || back != p {
			t.Fatalf("%q -> %q -> %+v, %v", s, p.String(), back, err)
		}
	})
}
