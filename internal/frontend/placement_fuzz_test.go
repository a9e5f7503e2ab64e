package frontend

import (
	"net/http"
	"testing"
)

// FuzzPlacementHeaders: any header values either parse into rules that
// hold what they say or are a 400, never a panic.
func FuzzPlacementHeaders(f *testing.F) {
	f.Add("1", "0-3", "zone=a,gpu=h100")
	f.Add("7:2", "5", "k=")
	f.Add("x", "3-1", "=v")
	f.Add("18446744073709551615:4294967295", "0-4294967295", ",,,")
	f.Fuzz(func(t *testing.T, pin, ranks, labels string) {
		h := http.Header{}
		h.Set(HeaderPinWorker, pin)
		h.Set(HeaderDPRanks, ranks)
		h.Set(HeaderRequireLabels, labels)
		p, e := placementHeaders(h)
		if e != nil {
			if e.Status != http.StatusBadRequest {
				t.Fatalf("status %d", e.Status)
			}
			return
		}
		if p != nil && p.Ranks != nil && p.Ranks.Min > p.Ranks.Max {
			t.Fatalf("empty rank range %+v accepted", *p.Ranks)
		}
		if p != nil && len(p.Labels) > maxRequiredLabels {
			t.Fatalf("%d labels accepted", len(p.Labels))
		}
	})
}
