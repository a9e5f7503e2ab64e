package app

import (
	"errors"
	"testing"

	"github.com/kvrouter/kvrouter/internal/eventplane/zmqsub"
)

// TestPodCacheResetDuringResolve: a worker joins (reset) while a topic's
// pod is being resolved against the membership read before the join. The
// stale "unknown pod" must not be cached: the next message of that pod
// resolves again and finds the worker.
func TestPodCacheResetDuringResolve(t *testing.T) {
	var c podCache
	joined := false
	slow := func() (uint64, error) {
		if joined {
			return 7, nil
		}
		// The membership was read before the join, which lands now.
		joined = true
		c.reset()
		return 0, zmqsub.ErrUnknownPod
	}
	if _, err := c.resolve("10.0.0.5:8000", "m", slow); !errors.Is(err, zmqsub.ErrUnknownPod) {
		t.Fatalf("first resolve: %v, want ErrUnknownPod", err)
	}
	id, err := c.resolve("10.0.0.5:8000", "m", slow)
	if err != nil || id != 7 {
		t.Fatalf("after the join: %d, %v; want worker 7", id, err)
	}
	// Without a reset, answers are cached: slow is not asked again.
	if id, err := c.resolve("10.0.0.5:8000", "m", func() (uint64, error) { return 0, errors.New("asked again") }); err != nil || id != 7 {
		t.Fatalf("cached: %d, %v; want worker 7", id, err)
	}
}
