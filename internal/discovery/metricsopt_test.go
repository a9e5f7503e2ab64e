package discovery

import (
	"errors"
	"strings"
	"testing"
)

// TestWorkerMetricsOption: --worker ...,metrics=off marks a worker whose
// /metrics is never read, metrics=auto is the default, anything else is
// refused; the workers file takes the same values.
func TestWorkerMetricsOption(t *testing.T) {
	for _, tc := range []struct {
		flag, want string
		bad        bool
	}{
		{"http://10.0.0.5:8000", "", false},
		{"http://10.0.0.5:8000,metrics=off", MetricsOff, false},
		{"http://10.0.0.5:8000,metrics=auto", "auto", false},
		{"http://10.0.0.5:8000,metrics=none", "", true},
	} {
		w, err := ParseWorkerFlag(tc.flag)
		if tc.bad {
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("%s: err %v, want ErrInvalid", tc.flag, err)
			}
			continue
		}
		if err != nil || w.Metrics != tc.want {
			t.Errorf("%s: metrics %q, %v; want %q", tc.flag, w.Metrics, err, tc.want)
		}
	}
	ws, err := DecodeStatic(strings.NewReader("workers:\n  - url: http://10.0.0.5:8000\n    metrics: \"off\"\n"))
	if err != nil || len(ws) != 1 || ws[0].Metrics != MetricsOff {
		t.Fatalf("workers file: %+v, %v", ws, err)
	}
}
