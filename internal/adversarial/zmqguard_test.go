package adversarial

import (
	"context"
	"encoding/binary"
	"strconv"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/kvrouter/kvrouter/internal/e2e"
	"github.com/kvrouter/kvrouter/internal/eventplane/zmqguard/zmtptest"
	"github.com/vmihailenco/msgpack/v5"
)

// TestZMQHugeFrame: a peer of `serve --zmq-bind` completes the ZMTP
// handshake as a PUB and declares one frame of 2^40 bytes (75 bytes on
// the wire; the old router died: fatal error: out of memory), then one
// above 2^48 (makeslice panic) and one of 2 MiB, over the configured
// --zmq-max-message-bytes of 1 MiB. The router stays up, drops and counts
// each peer, and an engine's publisher connected before them keeps
// indexing. Then a flood for an unknown pod stays within the hold's byte
// bound.
func TestZMQHugeFrame(t *testing.T) {
	skipShort(t)
	ports := e2e.FreePorts(t, 2)
	bind := "127.0.0.1:" + strconv.Itoa(ports[1])
	m := e2e.StartMocker(t, bins.Kvrouter, 1, "", "--speedup-ratio", "0", "--no-register")
	r := &e2e.Router{Name: "serve", Port: ports[0]}
	r.Proc = e2e.Start(t, "serve", bins.Kvrouter, "serve", "--no-nats", "--addr", "127.0.0.1:"+strconv.Itoa(ports[0]),
		"--worker", "http://127.0.0.1:"+strconv.Itoa(m.Port)+",id=1,pod=10.0.0.7",
		"--zmq-bind", "tcp://"+bind, "--zmq-max-message-bytes", "1048576", "--zmq-hold-max-bytes", "4194304")
	r.WaitReady(t, 60*time.Second)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pub := zmq4.NewPub(ctx)
	defer pub.Close()
	if err := pub.Dial("tcp://" + bind); err != nil {
		t.Fatal(err)
	}
	seq := uint64(0)
	publishUntil := func(what string, blocks int) {
		toks := make([]uint32, 64*blocks) // serve's default block size
		hashes := make([]any, blocks)
		for i := range toks {
			toks[i] = uint32(i + 1)
		}
		for i := range hashes {
			hashes[i] = uint64(100 + i)
		}
		payload, err := msgpack.Marshal([]any{0.0, []any{[]any{"BlockStored", hashes, nil, toks, 64, nil, "GPU"}}})
		if err != nil {
			t.Fatal(err)
		}
		until(t, 30*time.Second, what, func() bool {
			var sb [8]byte
			binary.BigEndian.PutUint64(sb[:], seq)
			seq++
			_ = pub.Send(zmq4.NewMsgFrom([]byte("kv@10.0.0.7@kvrouter-mock"), sb[:], payload))
			return indexBlocks(t, r, 1) >= blocks
		})
	}
	publishUntil("the engine's first blocks indexed", 1)

	for _, size := range []uint64{1 << 40, 1<<48 + 1, 2 << 20} {
		if err := zmtptest.Attack(bind, zmtptest.Hello("PUB"), zmtptest.Header(0, size), 30*time.Second); err != nil {
			t.Fatalf("a peer declaring %d bytes: %v", size, err)
		}
		alive(t, r)
	}
	until(t, 10*time.Second, "3 drops counted", func() bool {
		return metric(t, r, `kvrouter_zmq_peers_dropped_total{reason="frame_too_large"}`) == 3
	})
	publishUntil("the engine's blocks still indexed after the attacks", 2)
	alive(t, r)
	if got := metric(t, r, `kvrouter_store_limit_bytes{store="zmq_hold"}`); got != 4<<20 {
		t.Errorf("zmq_hold byte limit %v, want --zmq-hold-max-bytes %d", got, 4<<20)
	}

	// A publisher naming a pod no worker has: its messages are held for
	// the pod's registration, within --zmq-hold-max-bytes (the old hold
	// was bounded only by count: 400 messages of 1 MiB held 470 MB).
	big, err := msgpack.Marshal([]any{0.0, []any{[]any{"BlockStored", []any{uint64(1)}, nil,
		make([]uint32, 150_000), 64, nil, "GPU"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(big) < 128<<10 || len(big) > 1<<20 {
		t.Fatalf("flood message of %d bytes, want under the 1 MiB message bound", len(big))
	}
	held := metric(t, r, `kvrouter_events_rejected_total{reason="unknown_pod_expired"}`)
	for i := 0; i < 64; i++ {
		var sb [8]byte
		binary.BigEndian.PutUint64(sb[:], uint64(i))
		_ = pub.Send(zmq4.NewMsgFrom([]byte("kv@10.9.9.9@kvrouter-mock"), sb[:], big))
	}
	until(t, 30*time.Second, "the hold full and dropping its oldest", func() bool {
		return metric(t, r, `kvrouter_events_rejected_total{reason="unknown_pod_expired"}`) > held
	})
	if got := metric(t, r, `kvrouter_store_bytes{store="zmq_hold"}`); got <= 0 || got > 4<<20 {
		t.Errorf("zmq_hold holds %v bytes, want within (0, 4 MiB]", got)
	}
	alive(t, r)
	if got := metric(t, r, `kvrouter_store_limit_bytes{store="zmq_inflight"}`); got != 4<<20 {
		t.Errorf("zmq_inflight byte limit %v, want 4 messages of --zmq-max-message-bytes", got)
	}
}
