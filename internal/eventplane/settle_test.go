package eventplane_test

import (
	"context"
	"testing"
	"time"

	. "github.com/kvrouter/kvrouter/internal/eventplane"
	"github.com/kvrouter/kvrouter/internal/eventplane/eventplanetest"
)

// A server restart while messages await their acknowledgement, with no
// event after it: the publisher must still republish the failed messages
// on its own (not only when the next event wakes it), so nothing is lost
// when a worker goes quiet right after its NATS server died.
func TestPublisherRetriesWithoutNewEvents(t *testing.T) {
	conn := eventplanetest.Embedded(t)
	pub := NewPublisher(conn, PublisherConfig{Model: "m", MaxBatch: 1, Linger: -1, Logger: eventplanetest.Quiet})
	run(t, pub.Run)
	g := eventplanetest.NewGen(7, 4, 1)
	ctx := context.Background()
	const n = 2000
	for range n {
		if err := pub.Publish(ctx, g.Next()); err != nil {
			t.Fatal(err)
		}
	}
	inflight := n - int(pub.Stats().Events)
	if err := conn.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d of %d events unacknowledged at the restart", inflight, n)
	eventplanetest.WaitFor(t, 30*time.Second, "every event acknowledged without further input", func() bool {
		return pub.Stats().Events >= n
	})
	st, err := conn.JS.Stream(ctx, conn.Stream().Name)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != n {
		t.Fatalf("stream holds %d messages, want %d (one event each)", info.State.Msgs, n)
	}
}
