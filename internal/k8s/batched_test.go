package k8s

import (
	"testing"

	"github.com/kvrouter/kvrouter/internal/discovery"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// TestPodMaxBatchedTokens: a pod's kvrouter.io/max-batched-tokens
// annotation becomes its worker's MaxBatchedTokens; absent leaves it
// unknown (0: the picker's --worker-max-batched-tokens applies), and a
// malformed or out-of-bounds value is ignored with a warning rather than
// refusing the pod.
func TestPodMaxBatchedTokens(t *testing.T) {
	testPodIntAnnotation(t, AnnotationMaxBatchedTokens, discovery.MaxBatchedTokens,
		func(w discovery.Worker) int { return w.MaxBatchedTokens })
}

// TestPoolBatchedTokensEdit: editing a running pod's max-batched-tokens
// updates its worker in place (Join, no Leave: index and loads stay).
func TestPoolBatchedTokensEdit(t *testing.T) {
	ann := map[string]string{AnnotationWorkerID: "7", AnnotationMaxBatchedTokens: "2048"}
	client := fake.NewClientset(pod("a", "10.0.0.1", true, ann))
	_, rec, ctx := watchPool(t, client)
	want(t, rec.take(t, 1), "join 7 http://10.0.0.1:8000 bs=0 batched=2048")
	a := pod("a", "10.0.0.1", true, map[string]string{AnnotationWorkerID: "7", AnnotationMaxBatchedTokens: "8192"})
	if _, err := client.CoreV1().Pods("llm").Update(ctx, a, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	want(t, rec.take(t, 1), "join 7 http://10.0.0.1:8000 bs=0 batched=8192")
}
