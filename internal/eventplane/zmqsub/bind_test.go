package zmqsub_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/indexer"
	"github.com/kvrouter/kvrouter/internal/eventplane/eventplanetest"
	"github.com/kvrouter/kvrouter/internal/eventplane/zmqsub"
	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/kvhash"
)

// bindRig is a bind-topology Subscriber on 127.0.0.1:0 feeding a radix
// index, with a pod table the test edits (as registrations would).
type bindRig struct {
	sub *zmqsub.Subscriber
	ep  string

	mu        sync.Mutex
	idx       indexer.Index
	pods      map[string]uint64
	model     string
	ingests   map[string]uint64
	onResolve atomic.Pointer[func()] // called as each message is resolved, on the bind loop
}

func newBindRig(t *testing.T, cfg zmqsub.Config) *bindRig {
	t.Helper()
	r := &bindRig{idx: indexer.NewRadix(indexer.RadixConfig{}), pods: map[string]uint64{}, model: "test-model",
		ingests: map[string]uint64{}}
	cfg.BlockSize, cfg.Logger, cfg.Binds = 4, eventplanetest.Quiet, []string{"tcp://127.0.0.1:0"}
	cfg.Resolve = func(pod, model string) (uint64, error) {
		if f := r.onResolve.Load(); f != nil {
			(*f)()
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		id, ok := r.pods[pod]
		switch {
		case !ok:
			return 0, fmt.Errorf("%w %q", zmqsub.ErrUnknownPod, pod)
		case model != r.model:
			return id, zmqsub.ErrModelMismatch
		}
		return id, nil
	}
	cfg.OnIngest = func(w uint64, reason string, n uint64) {
		r.mu.Lock()
		r.ingests[fmt.Sprintf("%d:%s", w, reason)] += n
		r.mu.Unlock()
	}
	r.sub = zmqsub.New(cfg, zmqsub.SinkFunc(func(ev *kvevents.Event) error {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.idx.Apply(ev)
	}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := r.sub.Run(ctx); err != nil {
			t.Errorf("run: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	eventplanetest.WaitFor(t, 10*time.Second, "bound", func() bool { return len(r.sub.BindAddrs()) == 1 })
	r.ep = "tcp://" + r.sub.BindAddrs()[0].String()
	return r
}

func (r *bindRig) register(pod string, id uint64) {
	r.mu.Lock()
	r.pods[pod] = id
	r.mu.Unlock()
	r.sub.Kick()
}

func (r *bindRig) overlap(w uint64, offset int) int {
	toks := make([]uint32, 8)
	for i := range toks {
		toks[i] = uint32(1000 + offset*8 + i)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.idx.FindMatches(kvhash.LocalHashes(toks, 4, kvhash.Seed("", ""))).Get(kvevents.Worker{ID: w})
}

func (r *bindRig) count(key string) uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ingests[key]
}

// TestLibzmqBind: engines connect their PUB (real libzmq) to one bound SUB;
// each topic's pod names its worker, a wrong model is dropped and counted,
// and an unknown pod's messages are held until its worker registers, then
// applied in order.
func TestLibzmqBind(t *testing.T) {
	needPython(t)
	r := newBindRig(t, zmqsub.Config{})
	r.register("10.0.0.7:8000", 7)
	r.register("10.0.0.8", 8)
	startPublisher(t, "--connect", r.ep, "--batches", "2")
	startPublisher(t, "--connect", r.ep, "--batches", "2", "--topic", "kv@10.0.0.8@test-model")
	startPublisher(t, "--connect", r.ep, "--batches", "2", "--topic", "kv@10.0.0.9@test-model")
	startPublisher(t, "--connect", r.ep, "--batches", "2", "--topic", "kv@10.0.0.7:8000@other-model")
	eventplanetest.WaitFor(t, 30*time.Second, "messages", func() bool {
		st := r.sub.Stats()
		return st.Messages >= 8 && st.UnknownPod >= 2 && st.Mismatch >= 2
	})
	eventplanetest.WaitFor(t, 10*time.Second, "both workers indexed", func() bool {
		return r.overlap(7, 0) == 2 && r.overlap(8, 0) == 2
	})
	if got := r.count("7:model_mismatch"); got != 2 {
		t.Fatalf("model mismatches counted for worker 7: %d, want 2 (%v)", got, r.ingests)
	}
	if got := r.count("0:unknown_pod"); got != 2 {
		t.Fatalf("unknown pod messages: %d, want 2 (%v)", got, r.ingests)
	}
	if r.overlap(9, 0) != 0 {
		t.Fatal("an unknown pod's events reached the index")
	}
	// The pod registers: its held messages are applied in order.
	r.register("10.0.0.9", 9)
	eventplanetest.WaitFor(t, 10*time.Second, "held events applied", func() bool { return r.overlap(9, 0) == 2 })
	if st := r.sub.Stats(); st.HoldDropped != 0 || st.Gaps != 0 || st.Restarts != 0 || st.DecodeError != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// TestLibzmqBindHoldExpires: messages of a pod that never registers are
// dropped after HoldFor, counted.
func TestLibzmqBindHoldExpires(t *testing.T) {
	needPython(t)
	r := newBindRig(t, zmqsub.Config{HoldFor: 100 * time.Millisecond})
	startPublisher(t, "--connect", r.ep, "--batches", "3", "--topic", "kv@10.0.0.9@test-model")
	eventplanetest.WaitFor(t, 30*time.Second, "held messages dropped", func() bool {
		return r.sub.Stats().HoldDropped == 3
	})
	if got := r.count("0:unknown_pod_expired"); got != 3 {
		t.Fatalf("expired count %d, want 3 (%v)", got, r.ingests)
	}
	r.register("10.0.0.9", 9)
	if r.overlap(9, 0) != 0 {
		t.Fatal("expired events applied")
	}
}

// TestLibzmqRestartAfterOneBatch: a publisher restarted after exactly one
// message sends seq 0 again (equal to the last seen). The old code took it
// for a duplicate and kept the old blocks; it is a restart: the worker is
// cleared and the new blocks applied.
func TestLibzmqRestartAfterOneBatch(t *testing.T) {
	needPython(t)
	r := newBindRig(t, zmqsub.Config{})
	r.register("10.0.0.7:8000", 7)
	stop := startStoppable(t, "--connect", r.ep, "--batches", "1")
	eventplanetest.WaitFor(t, 30*time.Second, "first life", func() bool { return r.overlap(7, 0) == 1 })
	stop()
	startPublisher(t, "--connect", r.ep, "--batches", "1", "--offset", "5")
	eventplanetest.WaitFor(t, 30*time.Second, "second life", func() bool { return r.overlap(7, 5) == 1 })
	if got := r.overlap(7, 0); got != 0 {
		t.Fatalf("blocks of the engine's previous life still indexed: overlap %d", got)
	}
	if st := r.sub.Stats(); st.Restarts != 1 || st.Resyncs != 1 {
		t.Fatalf("stats %+v, want one restart", st)
	}
	if got := r.count("7:restart"); got != 1 {
		t.Fatalf("restart count %d (%v)", got, r.ingests)
	}
}
