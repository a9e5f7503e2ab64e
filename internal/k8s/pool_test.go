package k8s

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/internal/discovery"
	"github.com/kvrouter/kvrouter/internal/eventplane/zmqsub"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
)

// recorder is a discovery.Membership that logs every change.
type recorder struct {
	mu  sync.Mutex
	log []string
	ch  chan struct{}
}

func (r *recorder) Join(w discovery.Worker) error {
	s := fmt.Sprintf("join %d %s bs=%d", w.ID, w.URL, w.BlockSize)
	if w.MaxNumSeqs != 0 {
		s += fmt.Sprintf(" seqs=%d", w.MaxNumSeqs)
	}
	if w.MaxBatchedTokens != 0 {
		s += fmt.Sprintf(" batched=%d", w.MaxBatchedTokens)
	}
	r.add(s)
	return nil
}

func (r *recorder) Leave(id uint64) { r.add(fmt.Sprintf("leave %d", id)) }

func (r *recorder) add(s string) {
	r.mu.Lock()
	r.log = append(r.log, s)
	r.mu.Unlock()
	select {
	case r.ch <- struct{}{}:
	default:
	}
}

// take waits until n changes were recorded and returns them (and forgets them).
func (r *recorder) take(t *testing.T, n int) []string {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		r.mu.Lock()
		if len(r.log) >= n {
			out := r.log[:n:n]
			r.log = slices.Clone(r.log[n:])
			r.mu.Unlock()
			return out
		}
		r.mu.Unlock()
		select {
		case <-r.ch:
		case <-deadline:
			t.Fatalf("want %d membership changes, have %v", n, r.log)
		}
	}
}

func pod(name, ip string, ready bool, ann map[string]string) *corev1.Pod {
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "llm", Labels: map[string]string{"app": "vllm"}, Annotations: ann},
		Status:     corev1.PodStatus{PodIP: ip, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}},
	}
}

// TestPoolPods drives the informer through a fake clientset: a ready pod
// joins at its IP and target port with its topic id (or annotated id), an
// unready one leaves, a new IP is a new worker, a deletion leaves, a pod
// outside the selector is ignored.
func TestPoolPods(t *testing.T) {
	client := fake.NewClientset(pod("a", "10.0.0.1", true, nil))
	p, rec, ctx := watchPool(t, client)
	idA := zmqsub.TopicHash("10.0.0.1")
	want(t, rec.take(t, 1), fmt.Sprintf("join %d http://10.0.0.1:8000 bs=0", idA))

	pods := client.CoreV1().Pods("llm")
	b := pod("b", "10.0.0.2", false, map[string]string{AnnotationWorkerID: "7", AnnotationBlockSize: "16"})
	if _, err := pods.Create(ctx, b, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	b.Status.Conditions[0].Status = corev1.ConditionTrue // ready
	if _, err := pods.UpdateStatus(ctx, b, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	want(t, rec.take(t, 1), "join 7 http://10.0.0.2:8000 bs=16")

	a := pod("a", "10.0.0.1", false, nil) // unready
	if _, err := pods.UpdateStatus(ctx, a, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	want(t, rec.take(t, 1), fmt.Sprintf("leave %d", idA))
	a = pod("a", "10.0.0.9", true, nil) // ready again at a new IP: a new worker
	if _, err := pods.UpdateStatus(ctx, a, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	want(t, rec.take(t, 1), fmt.Sprintf("join %d http://10.0.0.9:8000 bs=0", zmqsub.TopicHash("10.0.0.9")))
	b.Status.PodIP = "10.0.0.3" // IP change of a joined pod: leave, then join
	if _, err := pods.UpdateStatus(ctx, b, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	want(t, rec.take(t, 2), "leave 7", "join 7 http://10.0.0.3:8000 bs=16")

	other := pod("c", "10.0.0.4", true, nil)
	other.Labels = map[string]string{"app": "other"}
	if _, err := pods.Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := pods.Delete(ctx, "b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	want(t, rec.take(t, 1), "leave 7") // and nothing for pod c
	if len(p.Members()) != 1 {
		t.Fatalf("members %v; want pod a only", p.Members())
	}
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(10 * time.Second); !p.Synced(); <-tick.C {
		if time.Now().After(deadline) {
			t.Fatal("pool never synced")
		}
	}
}

// watchPool runs a pool with selector app=vllm and target port 8000 over
// client until the test ends, and returns it once its watch is open. With
// zmqPorts (PUB, replay) it dials pods' KV events, recorded as changes.
func watchPool(t *testing.T, client *fake.Clientset, zmqPorts ...int) (*Pool, *recorder, context.Context) {
	t.Helper()
	watching := make(chan struct{})
	var once sync.Once
	// The informer lists, then watches; changes made before its watch is
	// open would be lost by the fake tracker, so the test waits for it.
	client.PrependWatchReactor("pods", func(a clienttesting.Action) (bool, watch.Interface, error) {
		w, err := client.Tracker().Watch(a.GetResource(), a.GetNamespace())
		once.Do(func() { close(watching) })
		return true, w, err
	})
	cfg := DefaultPoolConfig()
	cfg.Namespace, cfg.Selector, cfg.TargetPort = "llm", "app=vllm", 8000
	if len(zmqPorts) == 2 {
		cfg.ZMQPort, cfg.ZMQReplayPort = zmqPorts[0], zmqPorts[1]
	}
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	p, err := NewPool(cfg, client)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{ch: make(chan struct{}, 1)}
	if len(zmqPorts) == 2 {
		p.SetSources(sourceRecorder{rec})
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx, rec) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	<-watching
	return p, rec, ctx
}

func want(t *testing.T, got []string, exp ...string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(exp, "\n") {
		t.Fatalf("membership changes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(exp, "\n"))
	}
}

func TestPoolConfigValidate(t *testing.T) {
	c := DefaultPoolConfig()
	c.Selector, c.TargetPort = "app in (", 0
	err := c.Validate()
	if err == nil || !strings.Contains(err.Error(), "selector") || !strings.Contains(err.Error(), "target port") {
		t.Fatalf("want selector and port errors, got %v", err)
	}
}
