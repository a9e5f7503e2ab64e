package epp_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/kvrouter/kvrouter/internal/app"
	"github.com/kvrouter/kvrouter/internal/epp"
	"github.com/kvrouter/kvrouter/internal/frontend"
	"github.com/kvrouter/kvrouter/internal/k8s"
	"github.com/vmihailenco/msgpack/v5"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
)

// TestPoolDialsPodZMQ runs the picker as `kvrouter-epp --pool-zmq-port`
// does against a fake cluster: the pool's ready pod (here at 127.0.0.1,
// where the test's in-process PUB binds as vLLM does with endpoint
// tcp://*:PORT) is dialled when it joins (with its replay endpoint from
// --pool-zmq-replay-port), its KV events fill the index under its worker
// id, and it is undialled when it turns unready.
func TestPoolDialsPodZMQ(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	pub := zmq4.NewPub(ctx)
	defer pub.Close()
	if err := pub.Listen("tcp://127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	zport := pub.Addr().(*net.TCPAddr).Port
	ready := []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	vllm := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "vllm-0", Namespace: "llm", Labels: map[string]string{"app": "vllm"},
			Annotations: map[string]string{k8s.AnnotationWorkerID: "42"}},
		Status: corev1.PodStatus{PodIP: "127.0.0.1", Conditions: ready},
	}
	client := fake.NewClientset(vllm)
	// Updates made before the informer's watch is open would be lost by
	// the fake tracker: the test waits for it.
	watching := make(chan struct{})
	var once sync.Once
	client.PrependWatchReactor("pods", func(a clienttesting.Action) (bool, watch.Interface, error) {
		w, err := client.Tracker().Watch(a.GetResource(), a.GetNamespace())
		once.Do(func() { close(watching) })
		return true, w, err
	})
	cfg := loopbackConfig(t)
	cfg.Serve.NoNATS, cfg.Serve.ZMQDynamic = true, true // as epp.Run sets them with a pool
	cfg.Pool.Selector, cfg.Pool.Namespace, cfg.Pool.TargetPort, cfg.Pool.ZMQPort = "app=vllm", "llm", 8000, zport
	// Asked only on a sequence gap (none here): the source must carry it.
	cfg.Pool.ZMQReplayPort = zport + 1
	s, err := app.NewServe(cfg.Serve)
	if err != nil {
		t.Fatal(err)
	}
	pool, err := k8s.NewPool(cfg.Pool, client)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- epp.RunWith(ctx, s, cfg, pool) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("epp: %v", err)
		}
	})
	index := func() frontend.IndexReport {
		resp, err := http.Get("http://" + cfg.Serve.Listener.Addr().String() + "/debug/index")
		if err != nil {
			return frontend.IndexReport{}
		}
		defer resp.Body.Close()
		var r frontend.IndexReport
		_ = json.NewDecoder(resp.Body).Decode(&r)
		return r
	}
	toks := make([]uint32, 32)
	for i := range toks {
		toks[i] = uint32(1000 + i)
	}
	payload, err := msgpack.Marshal([]any{float64(time.Now().UnixNano()) / 1e9, []any{
		[]any{"BlockStored", []any{uint64(111), uint64(222)}, nil, toks, 16, nil, "GPU"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	var seq [8]byte
	next := uint64(0)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	// The PUB drops messages until the picker's SUB is connected: publish
	// (next seq) until the blocks show.
	waitFor(t, "worker 42's blocks through the dialled PUB", func() bool {
		binary.BigEndian.PutUint64(seq[:], next)
		next++
		_ = pub.Send(zmq4.NewMsgFrom([]byte("kv@127.0.0.1@kvrouter-mock"), seq[:], payload))
		<-tick.C
		rep := index()
		return len(rep.Workers) == 1 && rep.Workers[0].Worker == 42 && rep.Workers[0].Total == 2
	})
	if src := s.ZMQ().Sources(); len(src) != 1 || src[0].WorkerID != 42 || src[0].Endpoint != pub.Addr().Network()+"://"+pub.Addr().String() ||
		src[0].Replay != fmt.Sprintf("tcp://127.0.0.1:%d", zport+1) {
		t.Fatalf("dialled sources %+v", src)
	}

	<-watching
	vllm.Status.Conditions[0].Status = corev1.ConditionFalse
	if _, err := client.CoreV1().Pods("llm").UpdateStatus(ctx, vllm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the unready pod undialled and gone", func() bool {
		return len(s.ZMQ().Sources()) == 0 && len(index().Workers) == 0
	})
}
