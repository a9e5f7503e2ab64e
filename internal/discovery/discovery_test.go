package discovery_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/internal/discovery"
	"github.com/kvrouter/kvrouter/internal/eventplane/eventplanetest"
)

func TestParseWorkerFlag(t *testing.T) {
	w, err := discovery.ParseWorkerFlag("http://10.0.0.5:8000,id=3,zmq=tcp://10.0.0.5:5557,replay=tcp://10.0.0.5:5558,block-size=16,dp-size=2,label.zone=a")
	if err != nil {
		t.Fatal(err)
	}
	want := discovery.Worker{ID: 3, URL: "http://10.0.0.5:8000", EventEndpoint: "tcp://10.0.0.5:5557",
		ReplayEndpoint: "tcp://10.0.0.5:5558", BlockSize: 16, DPSize: 2, Labels: map[string]string{"zone": "a"}}
	if w.ID != want.ID || w.URL != want.URL || w.EventEndpoint != want.EventEndpoint || w.ReplayEndpoint != want.ReplayEndpoint ||
		w.BlockSize != 16 || w.DPSize != 2 || w.Labels["zone"] != "a" {
		t.Fatalf("got %+v", w)
	}
	for _, bad := range []string{"", "http://x:1,bogus=1", "http://x:1,block-size=x", "http://x:1,zmq=udp://y:2", "http://x:1,noequals"} {
		if _, err := discovery.ParseWorkerFlag(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestDecodeStatic(t *testing.T) {
	ws, err := discovery.DecodeStatic(strings.NewReader("workers:\n  - url: http://a:1\n    block_size: 16\n  - id: 1\n    url: http://b:1\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(ws) != 2 || ws[0].ID != 1 || ws[0].URL != "http://b:1" || ws[1].ID != 2 || ws[1].BlockSize != 16 {
		t.Fatalf("got %+v", ws)
	}
	if _, err := discovery.DecodeStatic(strings.NewReader("workers:\n  - url: http://a:1\n    blok_size: 16\n")); err == nil {
		t.Fatal("unknown key accepted")
	}
	if _, err := discovery.DecodeStatic(strings.NewReader("workers:\n  - {id: 1, url: 'http://a:1'}\n  - {id: 1, url: 'http://b:1'}\n")); err == nil {
		t.Fatal("duplicate id accepted")
	}
}

type members struct {
	mu     sync.Mutex
	joined map[uint64]discovery.Worker
	left   []uint64
}

func (m *members) Join(w discovery.Worker) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.joined[w.ID] = w
	return nil
}

func (m *members) Leave(id uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.joined, id)
	m.left = append(m.left, id)
}

func (m *members) has(id uint64) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.joined[id]
	return ok
}

func TestRegistryJoinLeaveExpireRefuse(t *testing.T) {
	conn := eventplanetest.Embedded(t)
	ttl := 300 * time.Millisecond
	reg := discovery.NewRegistry(conn, discovery.RegistryConfig{TTL: ttl, Heartbeat: ttl / 4, Logger: eventplanetest.Quiet})
	m := &members{joined: map[uint64]discovery.Worker{}}
	fleet := discovery.NewFleet(16, m, eventplanetest.Quiet)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Add(1)
	go func() { defer wg.Done(); _ = reg.Watch(ctx, fleet) }()

	// 1 heartbeats; 2 registers once and goes silent; 3 has the wrong block size.
	kctx, kcancel := context.WithCancel(ctx)
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = reg.Keepalive(kctx, discovery.Worker{ID: 1, URL: "http://a:1", BlockSize: 16})
	}()
	if err := reg.Register(ctx, discovery.Worker{ID: 2, URL: "http://b:1", BlockSize: 16}); err != nil {
		t.Fatal(err)
	}
	if err := reg.Register(ctx, discovery.Worker{ID: 3, URL: "http://c:1", BlockSize: 32}); err != nil {
		t.Fatal(err)
	}
	eventplanetest.WaitFor(t, 10*time.Second, "1 and 2 join", func() bool { return m.has(1) && m.has(2) })
	eventplanetest.WaitFor(t, 10*time.Second, "3 refused", func() bool { return fleet.Refused() == 1 })
	if m.has(3) {
		t.Fatal("worker with block size 32 joined a block-size-16 router")
	}
	eventplanetest.WaitFor(t, 10*time.Second, "2 expires", func() bool { return !m.has(2) })
	if !m.has(1) {
		t.Fatal("heartbeating worker 1 expired")
	}
	kcancel() // clean leave: deregisters
	eventplanetest.WaitFor(t, 10*time.Second, "1 leaves", func() bool { return !m.has(1) })
	if err := discovery.CheckBlockSize(16, discovery.Worker{ID: 9, BlockSize: 64}); !errors.Is(err, discovery.ErrBlockSize) ||
		!strings.Contains(err.Error(), "64") || !strings.Contains(err.Error(), "16") {
		t.Fatalf("CheckBlockSize: %v", err)
	}
}
