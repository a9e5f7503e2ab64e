package k8s

import (
	"fmt"
	"testing"

	"github.com/kvrouter/kvrouter/internal/eventplane/zmqsub"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// sourceRecorder logs Sources calls into the membership recorder's log,
// so the order of joins, leaves and dials shows.
type sourceRecorder struct{ rec *recorder }

func (s sourceRecorder) Add(src zmqsub.Source) error {
	s.rec.add(fmt.Sprintf("dial %d %s replay=%q dp=%d", src.WorkerID, src.Endpoint, src.Replay, src.DPSize))
	return nil
}

func (s sourceRecorder) Remove(id uint64) { s.rec.add(fmt.Sprintf("undial %d", id)) }

// TestPoolZMQSources: with a ZMQ port, a pod is dialled at its IP once
// it joins and undialled before it leaves (unready, IP change, deletion);
// the annotation names another endpoint ($(POD_IP) replaced).
func TestPoolZMQSources(t *testing.T) {
	client := fake.NewClientset(pod("a", "10.0.0.1", true, map[string]string{AnnotationWorkerID: "5"}))
	_, rec, ctx := watchPool(t, client, 5557, 5558)
	want(t, rec.take(t, 2), "join 5 http://10.0.0.1:8000 bs=0", "dial 5 tcp://10.0.0.1:5557 replay=\"tcp://10.0.0.1:5558\" dp=1")

	pods := client.CoreV1().Pods("llm")
	a := pod("a", "10.0.0.2", true, map[string]string{AnnotationWorkerID: "5"}) // new IP
	if _, err := pods.UpdateStatus(ctx, a, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	want(t, rec.take(t, 4), "undial 5", "leave 5", "join 5 http://10.0.0.2:8000 bs=0", "dial 5 tcp://10.0.0.2:5557 replay=\"tcp://10.0.0.2:5558\" dp=1")

	b := pod("b", "10.0.0.3", true, map[string]string{AnnotationWorkerID: "6", AnnotationDPSize: "2",
		AnnotationZMQEndpoint: "tcp://$(POD_IP):6000", AnnotationZMQReplayEndpoint: "tcp://$(POD_IP):6001"})
	if _, err := pods.Create(ctx, b, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	want(t, rec.take(t, 2), "join 6 http://10.0.0.3:8000 bs=0", "dial 6 tcp://10.0.0.3:6000 replay=\"tcp://10.0.0.3:6001\" dp=2")

	a.Status.Conditions[0].Status = corev1.ConditionFalse // unready
	if _, err := pods.UpdateStatus(ctx, a, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	want(t, rec.take(t, 2), "undial 5", "leave 5")
	if err := pods.Delete(ctx, "b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	want(t, rec.take(t, 2), "undial 6", "leave 6")
}
