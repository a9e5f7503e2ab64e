package zmqsub_test

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/kvrouter/kvrouter/internal/eventplane/eventplanetest"
	"github.com/kvrouter/kvrouter/internal/eventplane/zmqsub"
)

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
