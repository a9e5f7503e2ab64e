package zmqsub_test

import (
	"context"
	"encoding/binary"
	"sync"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/kvrouter/kvrouter/internal/eventplane/eventplanetest"
	"github.com/kvrouter/kvrouter/internal/eventplane/zmqsub"
	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/vmihailenco/msgpack/v5"
)

// inprocPub is an in-process PUB on 127.0.0.1:0 sending vLLM's
// [topic, seq, EventBatch] messages.
type inprocPub struct {
	sock zmq4.Socket
	ep   string
}

func newInprocPub(t *testing.T, ctx context.Context) *inprocPub {
	t.Helper()
	p := zmq4.NewPub(ctx)
	t.Cleanup(func() { _ = p.Close() })
	if err := p.Listen("tcp://127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	return &inprocPub{sock: p, ep: "tcp://" + p.Addr().String()}
}

// send publishes one BlockStored of hashes at seq.
func (p *inprocPub) send(t *testing.T, seq uint64, hashes ...uint64) {
	t.Helper()
	hs := make([]any, len(hashes))
	toks := make([]uint32, 4*len(hashes))
	for i, h := range hashes {
		hs[i] = h
	}
	payload, err := msgpack.Marshal([]any{0.0, []any{[]any{"BlockStored", hs, nil, toks, 4, nil, "GPU"}}})
	if err != nil {
		t.Fatal(err)
	}
	var s [8]byte
	binary.BigEndian.PutUint64(s[:], seq)
	_ = p.sock.Send(zmq4.NewMsgFrom([]byte("kv@pod@m"), s[:], payload))
}

// TestDynamicSources adds a source at run time, ingests from it, removes
// it (its socket closes: nothing more arrives), then adds the worker
// again at another endpoint whose publisher starts over at seq 0: the
// removed source's sequence state is gone, so that is no restart.
func TestDynamicSources(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	got := map[uint64]int{} // block hash -> stores seen
	sub := zmqsub.New(zmqsub.Config{BlockSize: 4, Dynamic: true, Logger: eventplanetest.Quiet},
		zmqsub.SinkFunc(func(ev *kvevents.Event) error {
			mu.Lock()
			defer mu.Unlock()
			if ev.WorkerID != 7 {
				t.Errorf("event of worker %d, want 7", ev.WorkerID)
			}
			for _, b := range ev.Blocks {
				got[b.Hash]++
			}
			return nil
		}))
	done := make(chan error, 1)
	a := newInprocPub(t, ctx)
	// Added before Run: dialled when Run starts.
	if err := sub.Add(zmqsub.Source{WorkerID: 7, Endpoint: a.ep}); err != nil {
		t.Fatal(err)
	}
	go func() { done <- sub.Run(ctx) }()
	seen := func(h uint64) bool { mu.Lock(); defer mu.Unlock(); return got[h] > 0 }
	// PUB drops messages until the SUB is connected: send again (next
	// seq: a seq at or below the last reads as a restart) until it shows.
	var seq uint64
	eventplanetest.WaitFor(t, 10*time.Second, "blocks from a", func() bool { a.send(t, seq, 11); seq++; return seen(11) })
	if err := sub.Add(zmqsub.Source{WorkerID: 7, Endpoint: a.ep}); err != nil { // same source: no-op
		t.Fatal(err)
	}
	if s := sub.Sources(); len(s) != 1 || s[0].Endpoint != a.ep || s[0].DPSize != 1 {
		t.Fatalf("sources %+v", s)
	}
	sub.Remove(7)
	if s := sub.Sources(); len(s) != 0 {
		t.Fatalf("sources after Remove %+v", s)
	}
	before := sub.Stats().Messages
	a.send(t, seq, 12)

	b := newInprocPub(t, ctx)
	if err := sub.Add(zmqsub.Source{WorkerID: 7, Endpoint: b.ep}); err != nil {
		t.Fatal(err)
	}
	seq = 0
	eventplanetest.WaitFor(t, 10*time.Second, "blocks from b", func() bool { b.send(t, seq, 13); seq++; return seen(13) })
	st := sub.Stats()
	if seen(12) {
		t.Fatal("a removed source's message was ingested")
	}
	if st.Restarts != 0 || st.Gaps != 0 || st.Resyncs != 0 {
		t.Fatalf("stats %+v: the re-added worker's seq 0 read against the removed source's state", st)
	}
	if st.Messages <= before {
		t.Fatalf("messages %d, before %d", st.Messages, before)
	}
	if err := sub.Add(zmqsub.Source{WorkerID: 8, Endpoint: "udp://x"}); err == nil {
		t.Fatal("Add accepted a bad endpoint")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := sub.Add(zmqsub.Source{WorkerID: 9, Endpoint: b.ep}); err != zmqsub.ErrStopped {
		t.Fatalf("Add after Run: %v, want ErrStopped", err)
	}
}
