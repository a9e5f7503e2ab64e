package epp_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/kvrouter/kvrouter/internal/epp"
	"github.com/kvrouter/kvrouter/internal/frontend"
	"github.com/kvrouter/kvrouter/internal/k8s"
	"github.com/vmihailenco/msgpack/v5"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// TestPoolWithBoundZMQ runs `kvrouter-epp` as deploy/kubernetes runs it,
// against a fake cluster: the workers are the InferencePool's ready pods
// (--pool-selector), and a vLLM pod publishing its KV events to the
// picker's bound ZMQ SUB (--zmq-bind) with vLLM's topic kv@<pod-ip>@<model>
// fills the index under that pod's worker id (here its kvrouter.io/worker-id
// annotation).
func TestPoolWithBoundZMQ(t *testing.T) {
	ready := []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	client := fake.NewClientset(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "vllm-0", Namespace: "llm", Labels: map[string]string{"app": "vllm"},
			Annotations: map[string]string{k8s.AnnotationWorkerID: "42", k8s.AnnotationBlockSize: "16"}},
		Status: corev1.PodStatus{PodIP: "10.0.0.7", Conditions: ready},
	})
	zport := freePort(t)
	cfg := loopbackConfig(t)
	cfg.Serve.ZMQBind = []string{"tcp://127.0.0.1:" + zport}
	cfg.Pool.Selector, cfg.Pool.Namespace, cfg.Pool.TargetPort = "app=vllm", "llm", 8000
	cfg.KubeClient = client
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- epp.Run(ctx, cfg) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("epp: %v", err)
		}
	})
	base := "http://" + cfg.Serve.Listener.Addr().String()
	var rep frontend.IndexReport
	index := func() frontend.IndexReport {
		resp, err := http.Get(base + "/debug/index")
		if err != nil {
			return frontend.IndexReport{}
		}
		defer resp.Body.Close()
		var r frontend.IndexReport
		_ = json.NewDecoder(resp.Body).Decode(&r)
		return r
	}
	waitFor(t, "pod vllm-0 as worker 42", func() bool {
		rep = index()
		return len(rep.Workers) == 1 && rep.Workers[0].Worker == 42 && rep.Workers[0].URL == "http://10.0.0.7:8000"
	})

	// The vLLM pod's publisher connects to the picker (vLLM connects when
	// its endpoint names a host) and sends [topic, seq, EventBatch].
	pub := zmq4.NewPub(ctx)
	defer pub.Close()
	if err := pub.Dial("tcp://127.0.0.1:" + zport); err != nil {
		t.Fatal(err)
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
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	// PUB drops messages until the connection is up: resend until the
	// blocks show. The subscriber reads a repeated seq as an engine restart
	// (ZMQ never redelivers), which resets the worker and applies the same
	// two stores again, so the end state is the same.
	waitFor(t, "worker 42's blocks from the bound ZMQ SUB", func() bool {
		binary.BigEndian.PutUint64(seq[:], 0)
		_ = pub.Send(zmq4.NewMsgFrom([]byte("kv@10.0.0.7@kvrouter-mock"), seq[:], payload))
		<-tick.C
		rep = index()
		return len(rep.Workers) == 1 && rep.Workers[0].Total == 2
	})
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

// loopbackConfig is a picker on 127.0.0.1 listeners with 16-token blocks
// and no load polling, the base of the pool tests.
func loopbackConfig(t *testing.T) epp.Config {
	t.Helper()
	httpLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	grpcLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := epp.DefaultConfig()
	cfg.Serve.Listener, cfg.GRPCListener = httpLn, grpcLn
	cfg.Serve.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg.Serve.Frontend.Router.BlockSize = 16
	cfg.Serve.Frontend.LoadPollInterval = -1
	return cfg
}
