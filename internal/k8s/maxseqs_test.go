package k8s

import (
	"bytes"
	"log/slog"
	"strconv"
	"strings"
	"testing"

	"github.com/kvrouter/kvrouter/internal/discovery"
	"github.com/kvrouter/kvrouter/router"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// TestPodMaxNumSeqs: a pod's kvrouter.io/max-num-seqs annotation becomes
// its worker's MaxNumSeqs; absent leaves it unknown (0), and a malformed
// or out-of-bounds value is ignored with a warning rather than refusing
// the pod.
func TestPodMaxNumSeqs(t *testing.T) {
	testPodIntAnnotation(t, AnnotationMaxNumSeqs, discovery.MaxNumSeqs, func(w discovery.Worker) int { return w.MaxNumSeqs })
}

// TestPodMaxLoRAs: kvrouter.io/max-loras becomes the worker's MaxLoRAs.
func TestPodMaxLoRAs(t *testing.T) {
	testPodIntAnnotation(t, AnnotationMaxLoRAs, router.MaxWorkerLoRAs, func(w discovery.Worker) int { return w.MaxLoRAs })
}

// testPodIntAnnotation checks how Pool.worker reads the int annotation
// key into the field get reads: absent 0; a value in [0, limit] as is
// (with another annotation beside); negative, above limit or not a
// number 0 with a warning naming the annotation.
func testPodIntAnnotation(t *testing.T, key string, limit int, get func(discovery.Worker) int) {
	t.Helper()
	var logs bytes.Buffer
	cfg := DefaultPoolConfig()
	cfg.Selector = "app=vllm"
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	p, err := NewPool(cfg, fake.NewClientset())
	if err != nil {
		t.Fatal(err)
	}
	name := strings.TrimPrefix(key, "kvrouter.io/")
	for _, tc := range []struct {
		ann  map[string]string
		want int
		warn bool
	}{
		{nil, 0, false},
		{map[string]string{key: "256"}, 256, false},
		{map[string]string{key: strconv.Itoa(limit), AnnotationDPSize: "2"}, limit, false},
		{map[string]string{key: "-1"}, 0, true},
		{map[string]string{key: strconv.Itoa(limit + 1)}, 0, true},
		{map[string]string{key: "many"}, 0, true},
	} {
		logs.Reset()
		w, ready := p.worker(pod("a", "10.0.0.1", true, tc.ann))
		if !ready || get(w) != tc.want {
			t.Errorf("%v: ready %v %s %d, want ready and %d", tc.ann, ready, name, get(w), tc.want)
		}
		if err := w.Validate(); err != nil {
			t.Errorf("%v: worker invalid: %v", tc.ann, err)
		}
		if warned := strings.Contains(logs.String(), name); warned != tc.warn {
			t.Errorf("%v: warned %v, want %v: %s", tc.ann, warned, tc.warn, logs.String())
		}
	}
}

// TestPoolAnnotationEdits edits a running pod's annotations: a new
// max-num-seqs updates the worker in place (Join, no Leave, so its index
// and loads stay), a new dp size makes it leave and join anew, and an
// edit the router does not read changes nothing.
func TestPoolAnnotationEdits(t *testing.T) {
	ann := map[string]string{AnnotationWorkerID: "7", AnnotationMaxNumSeqs: "64"}
	client := fake.NewClientset(pod("a", "10.0.0.1", true, ann))
	p, rec, ctx := watchPool(t, client)
	want(t, rec.take(t, 1), "join 7 http://10.0.0.1:8000 bs=0 seqs=64")

	pods := client.CoreV1().Pods("llm")
	edit := func(kv ...string) {
		t.Helper()
		a := pod("a", "10.0.0.1", true, map[string]string{AnnotationWorkerID: "7"})
		for i := 0; i < len(kv); i += 2 {
			a.Annotations[kv[i]] = kv[i+1]
		}
		if _, err := pods.Update(ctx, a, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	edit(AnnotationMaxNumSeqs, "128")
	want(t, rec.take(t, 1), "join 7 http://10.0.0.1:8000 bs=0 seqs=128")
	edit(AnnotationMaxNumSeqs, "128", "team", "blue") // read by nobody
	edit(AnnotationMaxNumSeqs, "128", AnnotationDPSize, "2")
	want(t, rec.take(t, 2), "leave 7", "join 7 http://10.0.0.1:8000 bs=0 seqs=128")
	edit(AnnotationDPSize, "2") // annotation removed: back to unknown
	want(t, rec.take(t, 1), "join 7 http://10.0.0.1:8000 bs=0")
	if got := p.Members(); len(got) != 1 || got["llm/a"] != 7 {
		t.Fatalf("members %v; want llm/a as worker 7", got)
	}
}
