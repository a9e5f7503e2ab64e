package fleet_test

import (
	"context"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/internal/fleet"
)

// runFleet runs f until the test ends and waits until it is ready; a fleet
// that stops first, or is not ready within 30 s, fails the test.
func runFleet(t *testing.T, f *fleet.Fleet) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("fleet run: %v", err)
		}
	})
	select {
	case <-f.Ready():
	case err := <-done:
		done <- err // for the cleanup
		t.Fatalf("fleet stopped before ready: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("fleet not ready after 30s")
	}
}
