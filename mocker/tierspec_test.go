package mocker

import (
	"strings"
	"testing"
)

func TestParseTierSizes(t *testing.T) {
	got, err := ParseTierSizes("host=4x,disk=16x,shared=1000")
	want := TierSizes{Host: TierSize{Mult: 4}, Disk: TierSize{Mult: 16}, Shared: TierSize{Blocks: 1000}}
	if err != nil || got != want {
		t.Fatalf("got %+v, %v; want %+v", got, err, want)
	}
	if got.String() != "host=4x,disk=16x,shared=1000" {
		t.Errorf("String %q", got.String())
	}
	for _, none := range []string{"", " none "} {
		if got, err := ParseTierSizes(none); err != nil || got.Enabled() {
			t.Errorf("%q: %+v %v", none, got, err)
		}
	}
	for _, bad := range []string{"host", "gpu=4x", "host=0x", "disk=-3", "host=x", "shared=1.5", "host=Infx", "host=NaNx"} {
		if _, err := ParseTierSizes(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	// Every bad part is reported, not just the first.
	_, err = ParseTierSizes("gpu=1x,disk=0")
	if err == nil || !strings.Contains(err.Error(), "gpu") || !strings.Contains(err.Error(), "disk") {
		t.Errorf("two bad parts: %v", err)
	}
}

// The spec comes from flags and YAML: any string is parsed without a
// panic, an accepted spec has positive sizes only, and its String parses
// back to the same sizes.
func FuzzParseTierSizes(f *testing.F) {
	for _, s := range []string{"", "none", "host=4x,disk=16x,shared=64x", "shared=1000", "host=0.5x", "host=1e308x", "disk=-1", "host=4x,host=2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseTierSizes(s)
		if err != nil {
			return
		}
		for _, ts := range []TierSize{got.Host, got.Disk, got.Shared} {
			if ts.Mult < 0 || ts.Blocks < 0 || (ts.Mult > 0 && ts.Blocks > 0) {
				t.Fatalf("%q: size %+v", s, ts)
			}
		}
		back, err := ParseTierSizes(got.String())
		if err != nil || back != got {
			t.Fatalf("%q -> %q -> %+v, %v; want %+v", s, got.String(), back, err, got)
		}
	})
}
