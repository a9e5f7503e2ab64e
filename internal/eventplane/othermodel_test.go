package eventplane_test

import (
	"context"
	"testing"
	"time"

	. "github.com/kvrouter/kvrouter/internal/eventplane"
	"github.com/kvrouter/kvrouter/internal/eventplane/eventplanetest"
	"github.com/kvrouter/kvrouter/kvevents"
)

// TestSubscriberReadyPastOtherModels: a subscriber of model "a" is ready
// when "a"'s last message is applied, though the stream goes on with model
// "b"'s (whose messages its filter never delivers); and ready at once when
// the stream holds only "b"'s (a fresh model, or after a reset purged
// "a"'s).
func TestSubscriberReadyPastOtherModels(t *testing.T) {
	ctx := context.Background()
	conn := eventplanetest.Embedded(t)
	publish := func(model string, n int) {
		pub := NewPublisher(conn, PublisherConfig{Model: model, AssignIDs: true, Logger: eventplanetest.Quiet})
		stop := run(t, pub.Run)
		defer stop()
		for range n {
			ev := kvevents.Event{WorkerID: 1, Kind: kvevents.KindStored,
				Blocks: []kvevents.Block{{Hash: uint64(1000*len(model)) + uint64(n), Local: 7}}}
			if err := pub.Publish(ctx, ev); err != nil {
				t.Fatal(err)
			}
		}
		if err := pub.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	ready := func(model string, want uint64) {
		t.Helper()
		sub := NewSubscriber(conn, index(t), SubscriberConfig{Model: model, Logger: eventplanetest.Quiet})
		run(t, sub.Run)
		select {
		case <-sub.Ready():
		case <-time.After(10 * time.Second):
			t.Fatalf("model %q: not ready after 10s (%d events applied)", model, sub.Stats().Events)
		}
		if got := sub.Stats().Events; got != want {
			t.Fatalf("model %q: ready after %d events, want %d", model, got, want)
		}
	}
	publish("b", 3)
	ready("a", 0)
	publish("a", 2)
	publish("b", 3)
	ready("a", 2)
}
