package zmqsub_test

import (
	"context"
	"encoding/binary"
	"sync"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/kvrouter/kvrouter/internal/eventplane/eventplanetest"
	"github.com/kvrouter/kvrouter/internal/eventplane/zmqguard"
	"github.com/kvrouter/kvrouter/internal/eventplane/zmqguard/zmtptest"
	"github.com/kvrouter/kvrouter/internal/eventplane/zmqsub"
	"github.com/vmihailenco/msgpack/v5"
)

// TestBindDropsHugeFrame: a peer of the bound SUB completes the ZMTP
// handshake as a PUB and declares a 2^40-byte frame, then another one
// above 2^48 (75 bytes each; unguarded, zmq4 dies of them: fatal error:
// out of memory, makeslice panic). Both peers are dropped and counted by
// reason, and a publisher connected before them still delivers.
func TestBindDropsHugeFrame(t *testing.T) {
	var mu sync.Mutex
	dropped := map[string]int{}
	r := newBindRig(t, zmqsub.Config{OnPeerDropped: func(reason string) {
		mu.Lock()
		dropped[reason]++
		mu.Unlock()
	}})
	r.register("10.0.0.7", 7)
	pub := zmq4.NewPub(context.Background())
	defer pub.Close()
	if err := pub.Dial(r.ep); err != nil {
		t.Fatal(err)
	}
	payload, err := msgpack.Marshal([]any{0.0, []any{[]any{"BlockStored", []any{uint64(1)}, nil, []uint32{1, 2, 3, 4}, 4, nil, "GPU"}}})
	if err != nil {
		t.Fatal(err)
	}
	seq := uint64(0)
	sendUntil := func(what string, cond func() bool) {
		eventplanetest.WaitFor(t, 10*time.Second, what, func() bool {
			var sb [8]byte
			binary.BigEndian.PutUint64(sb[:], seq)
			seq++
			_ = pub.Send(zmq4.NewMsgFrom([]byte("kv@10.0.0.7@test-model"), sb[:], payload))
			return cond()
		})
	}
	sendUntil("a first message", func() bool { return r.sub.Stats().Events > 0 })
	for _, size := range []uint64{1 << 40, 1<<48 + 1} {
		if err := zmtptest.Attack(r.sub.BindAddrs()[0].String(), zmtptest.Hello("PUB"), zmtptest.Header(0, size), 10*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	eventplanetest.WaitFor(t, 10*time.Second, "drops counted", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return dropped[zmqguard.ReasonFrame] == 2
	})
	before := r.sub.Stats().Events
	sendUntil("messages after the attack", func() bool { return r.sub.Stats().Events > before })
}
