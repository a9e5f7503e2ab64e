package zmqguard

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/kvrouter/kvrouter/internal/eventplane/zmqguard/zmtptest"
)

// drops records the guard's drops by reason.
type drops struct {
	mu sync.Mutex
	by map[string]int
	c  chan string
}

func newDrops() *drops { return &drops{by: map[string]int{}, c: make(chan string, 16)} }

func (d *drops) guard(l Limits) *Guard {
	return &Guard{Limits: l, OnDrop: func(reason string, _ net.Addr, _ error) {
		d.mu.Lock()
		d.by[reason]++
		d.mu.Unlock()
		d.c <- reason
	}}
}

func (d *drops) want(t *testing.T, reason string) {
	t.Helper()
	select {
	case got := <-d.c:
		if got != reason {
			t.Fatalf("dropped for %s; want %s", got, reason)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("no drop; want one for %s", reason)
	}
}

// bindSub binds a guarded SUB on 127.0.0.1 and returns it and its address.
func bindSub(t *testing.T, g *Guard) (zmq4.Socket, string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	sub := zmq4.NewSub(WithGuard(ctx, g))
	t.Cleanup(func() { _ = sub.Close() })
	_ = sub.SetOption(zmq4.OptionSubscribe, "")
	if err := sub.Listen(Endpoint("tcp://127.0.0.1:0")); err != nil {
		t.Fatal(err)
	}
	return sub, sub.Addr().String()
}

// attack plays a peer (zmtptest.Attack) and fails unless it is closed.
func attack(t *testing.T, addr string, hello, then []byte) {
	t.Helper()
	if err := zmtptest.Attack(addr, hello, then, 10*time.Second); err != nil {
		t.Fatal(err)
	}
}

// publish sends msg on pub until sub receives it (a PUB drops messages
// until the SUB's subscription arrived).
func publish(t *testing.T, pub, sub zmq4.Socket, body string) {
	t.Helper()
	got := make(chan string, 1)
	go func() {
		for {
			m, err := sub.Recv()
			if errors.Is(err, context.Canceled) {
				return
			}
			// Other errors are the dropped peers' (zmq4 queues them).
			if len(m.Frames) == 3 && string(m.Frames[2]) == body {
				got <- body
				return
			}
		}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if err := pub.Send(zmq4.NewMsgFrom([]byte("kv@p@m"), make([]byte, 8), []byte(body))); err != nil {
			t.Fatal(err)
		}
		select {
		case <-got:
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
	t.Fatalf("message %q never arrived", body)
}

// The 75-byte kill: a peer completes the handshake as a PUB and declares
// a 2^40-byte frame (then one above 2^48). Unguarded zmq4 dies of it
// (fatal error: runtime: out of memory; makeslice panic). Guarded, both
// peers are dropped and counted, and a legitimate publisher connected
// before them keeps publishing.
func TestGuardDropsHugeFrame(t *testing.T) {
	d := newDrops()
	sub, addr := bindSub(t, d.guard(Limits{}))
	pub := zmq4.NewPub(context.Background())
	defer pub.Close()
	if err := pub.Dial("tcp://" + addr); err != nil {
		t.Fatal(err)
	}
	publish(t, pub, sub, "before")
	for _, size := range []uint64{1 << 40, 1<<48 + 1} {
		attack(t, addr, zmtptest.Hello("PUB"), zmtptest.Header(0, size))
		d.want(t, ReasonFrame)
	}
	publish(t, pub, sub, "after")
}

// zmq4 v0.17 slices a READY property without bounds checks: a truncated
// one panics its accept goroutine (the whole process). Guarded, the peer
// is dropped.
func TestGuardDropsTruncatedReady(t *testing.T) {
	d := newDrops()
	_, addr := bindSub(t, d.guard(Limits{}))
	ready := zmtptest.Command("READY", zmtptest.Property("Socket-Type", "PUB")[:12])
	attack(t, addr, append(zmtptest.Greeting(), ready...), nil)
	d.want(t, ReasonMalformed)
}

// A silent peer would hold zmq4's accept loop (it handshakes inline); one
// whose handshake zmq4 refuses (a REQ peer) would stay open. Both are
// closed at the handshake timeout, and a publisher connects afterwards.
func TestGuardHandshakeTimeout(t *testing.T) {
	d := newDrops()
	sub, addr := bindSub(t, d.guard(Limits{HandshakeTimeout: 200 * time.Millisecond}))
	attack(t, addr, nil, nil)
	d.want(t, ReasonHandshake)
	attack(t, addr, zmtptest.Hello("REQ"), nil)
	d.want(t, ReasonHandshake)
	pub := zmq4.NewPub(context.Background())
	defer pub.Close()
	if err := pub.Dial("tcp://" + addr); err != nil {
		t.Fatal(err)
	}
	publish(t, pub, sub, "still accepting")
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.by[ReasonHandshake] != 2 {
		t.Fatalf("drops %v: the publisher was dropped too", d.by)
	}
}

// A dialed socket is guarded too: a PUB that sends an oversized frame to
// the SUB that dialed it is dropped.
func TestGuardDial(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = c.Write(zmtptest.Hello("PUB"))
		if zmtptest.ReadHandshake(c, 0) == nil {
			_, _ = c.Write(zmtptest.Header(0, 1<<40))
		}
		_, _ = io.Copy(io.Discard, c)
	}()
	d := newDrops()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sub := zmq4.NewSub(WithGuard(ctx, d.guard(Limits{})))
	defer sub.Close()
	if err := sub.Dial(Endpoint("tcp://" + ln.Addr().String())); err != nil {
		t.Fatal(err)
	}
	d.want(t, ReasonFrame)
}
