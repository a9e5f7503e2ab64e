package k8s

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes/fake"
)

// TestPodMaxNumSeqs: a pod's kvrouter.io/max-num-seqs annotation becomes
// its worker's MaxNumSeqs; absent leaves it unknown (0), and a malformed
// or out-of-bounds value is ignored with a warning rather than refusing
// the pod.
func TestPodMaxNumSeqs(t *testing.T) {
	var logs bytes.Buffer
	cfg := DefaultPoolConfig()
	cfg.Selector = "app=vllm"
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	p, err := NewPool(cfg, fake.NewClientset())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		ann  map[string]string
		want int
		warn bool
	}{
		{nil, 0, false},
		{map[string]string{AnnotationMaxNumSeqs: "256"}, 256, false},
		{map[string]string{AnnotationMaxNumSeqs: "1048576", AnnotationDPSize: "2"}, 1 << 20, false},
		{map[string]string{AnnotationMaxNumSeqs: "-1"}, 0, true},
		{map[string]string{AnnotationMaxNumSeqs: "1048577"}, 0, true},
		{map[string]string{AnnotationMaxNumSeqs: "many"}, 0, true},
	} {
		logs.Reset()
		w, ready := p.worker(pod("a", "10.0.0.1", true, tc.ann))
		if !ready || w.MaxNumSeqs != tc.want {
			t.Errorf("%v: ready %v max_num_seqs %d, want ready and %d", tc.ann, ready, w.MaxNumSeqs, tc.want)
		}
		if err := w.Validate(); err != nil {
			t.Errorf("%v: worker invalid: %v", tc.ann, err)
		}
		if warned := strings.Contains(logs.String(), "max-num-seqs"); warned != tc.warn {
			t.Errorf("%v: warned %v, want %v: %s", tc.ann, warned, tc.warn, logs.String())
		}
	}
}
