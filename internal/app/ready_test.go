package app

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/kvrouter/kvrouter/internal/frontend"
)

// TestReadyWaitsForRegistry: Ready stays open while the registry has not
// delivered its initial entries (a router that does not know its
// registered workers yet would refuse their requests), and closes once it
// has. The gate's synced channel closes on the first Synced only.
func TestReadyWaitsForRegistry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newMemberGate(nil, func(uint64) bool { return false }, func(uint64, string, uint64) {})
		s := &Serve{ready: make(chan struct{}), fe: &frontend.Server{}, gate: g}
		done := make(chan error, 1)
		natsUp := make(chan struct{})
		close(natsUp) // connected (no replica in this test)
		go func() { done <- s.signalReady(context.Background(), natsUp) }()
		synctest.Wait() // signalReady is blocked on whatever it waits for
		select {
		case <-s.Ready():
			t.Fatal("Ready closed before the registry's first read")
		default:
		}
		if ok, why := s.readinessRegistry(); ok || why == "" {
			t.Fatalf("readiness before the registry's first read = %v %q, want false with a reason", ok, why)
		}
		g.Synced()
		g.Synced() // every restarted watch calls it again
		synctest.Wait()
		select {
		case <-s.Ready():
		default:
			t.Fatal("Ready still open after the registry's first read")
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if ok, why := s.readinessRegistry(); !ok {
			t.Fatalf("readiness after the registry's first read = false %q", why)
		}
	})
}
