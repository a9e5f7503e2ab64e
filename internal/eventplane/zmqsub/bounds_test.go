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

// TestBindHoldBoundedInBytes: an unknown pod's messages are held by bytes
// too, not only by count. The old hold kept 1024 messages whatever their
// size (400 messages of 1 MiB: +470 MB for 30 s); 80 messages of 1 MiB
// now keep at most the default 64 MiB, the oldest dropped and counted.
func TestBindHoldBoundedInBytes(t *testing.T) {
	r := newBindRig(t, zmqsub.Config{})
	pub := zmq4.NewPub(context.Background())
	defer pub.Close()
	if err := pub.Dial(r.ep); err != nil {
		t.Fatal(err)
	}
	payload := make([]byte, 1<<20)
	send := func(seq uint64) {
		var sb [8]byte
		binary.BigEndian.PutUint64(sb[:], seq)
		if err := pub.Send(zmq4.NewMsgFrom([]byte("kv@10.0.0.9@test-model"), sb[:], payload)); err != nil {
			t.Fatal(err)
		}
	}
	// A PUB drops what it sends before the SUB's subscription arrived.
	seq := uint64(0)
	eventplanetest.WaitFor(t, 10*time.Second, "subscribed", func() bool {
		send(seq)
		seq++
		return r.sub.Stats().UnknownPod > 0
	})
	for range 80 {
		send(seq)
		seq++
	}
	var st zmqsub.Stats
	eventplanetest.WaitFor(t, 30*time.Second, "all received and held or dropped", func() bool {
		st = r.sub.Stats()
		n, _ := r.sub.HoldStore().Size()
		return st.UnknownPod >= 81 && uint64(n) == st.UnknownPod-st.HoldDropped
	})
	held := st.UnknownPod - st.HoldDropped
	if held*(1<<20) > zmqsub.DefaultHoldMaxBytes {
		t.Fatalf("%d messages of 1 MiB held (received %d, dropped %d); the bound is %d bytes",
			held, st.UnknownPod, st.HoldDropped, zmqsub.DefaultHoldMaxBytes)
	}
	if got := r.count("0:unknown_pod_expired"); got != st.HoldDropped {
		t.Fatalf("drops counted %d, stats %d", got, st.HoldDropped)
	}
	n, b := r.sub.HoldStore().Size()
	if n != int64(held) || b > zmqsub.DefaultHoldMaxBytes || b < n<<20 {
		t.Fatalf("zmq_hold store: %d entries, %d bytes; want %d entries within %d bytes", n, b, held, zmqsub.DefaultHoldMaxBytes)
	}
}

// TestBindInflightBoundedInBytes: while the bind loop is busy, received
// messages wait for it bounded in bytes (4 of the largest messages), not
// only in count (256 messages of up to MaxMessageBytes each): with 6 MiB
// messages and an 8 MiB bound, 5 wait (32 MiB) and the rest stay in TCP
// until the loop catches up; none is lost.
func TestBindInflightBoundedInBytes(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	r := newBindRig(t, zmqsub.Config{MaxMessageBytes: 8 << 20, HoldFor: time.Hour})
	t.Cleanup(unblock) // before the rig's cleanup (LIFO), which waits for the loop
	blocked := make(chan struct{}, 1)
	block := func() {
		select {
		case blocked <- struct{}{}:
			<-release
		default:
		}
	}
	r.onResolve.Store(&block)
	pub := zmq4.NewPub(context.Background())
	defer pub.Close()
	if err := pub.Dial(r.ep); err != nil {
		t.Fatal(err)
	}
	payload := make([]byte, 6<<20) // its pod is unknown: held, never decoded
	seq := uint64(0)
	send := func() {
		var sb [8]byte
		binary.BigEndian.PutUint64(sb[:], seq)
		seq++
		_ = pub.Send(zmq4.NewMsgFrom([]byte("kv@10.0.0.7@test-model"), sb[:], payload))
	}
	// The first message that arrives blocks the loop in the sink.
	eventplanetest.WaitFor(t, 10*time.Second, "the loop blocked", func() bool {
		send()
		select {
		case <-blocked:
			return true
		default:
			return false
		}
	})
	for range 10 {
		send()
	}
	_, limit := r.sub.InflightStore().Limits()
	var most int64
	deadline := time.After(2 * time.Second)
	for waiting := true; waiting; {
		select {
		case <-deadline:
			waiting = false
		default:
			n, b := r.sub.InflightStore().Size()
			most = max(most, n)
			if b > limit {
				t.Fatalf("%d messages, %d bytes waiting; the bound is %d bytes", n, b, limit)
			}
		}
	}
	if most != 5 {
		t.Fatalf("at most %d messages waited, want 5 (32 MiB of 6 MiB messages)", most)
	}
	unblock()
	eventplanetest.WaitFor(t, 30*time.Second, "the rest handled", func() bool {
		n, _ := r.sub.InflightStore().Size()
		return n == 0 && r.sub.Stats().Messages >= 11
	})
}
