package eventdump

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/internal/eventplane"
	"github.com/kvrouter/kvrouter/internal/eventplane/eventplanetest"
	"github.com/kvrouter/kvrouter/kvevents"
)

// syncBuffer is a bytes.Buffer safe to read while Tail writes to it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestTailNATS tails an embedded server over TCP: a published envelope
// comes out as its events' JSON lines, an undecodable message is skipped,
// and cancelling the context ends Tail with nil.
func TestTailNATS(t *testing.T) {
	conn := eventplanetest.EmbeddedWith(t, func(c *eventplane.Config) { c.LoopbackTCP = true })
	evs := []kvevents.Event{
		{WorkerID: 3, EventID: 1, Kind: kvevents.KindStored, Blocks: []kvevents.Block{{Hash: 11, Local: 12}}},
		{WorkerID: 3, EventID: 2, Kind: kvevents.KindRemoved, Hashes: []uint64{11}},
	}
	payload, err := eventplane.EncodeEnvelope(nil, eventplane.FormatMsgpack, evs)
	if err != nil {
		t.Fatal(err)
	}
	var want string
	for i := range evs {
		want += string(kvevents.AppendJSON(nil, &evs[i])) + "\n"
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- Tail(ctx, TailConfig{NATS: eventplane.Config{URL: conn.ClientURL()}, Subject: "kvrouter.*.kv.*",
			Logger: eventplanetest.Quiet}, &out)
	}()
	// The subscription starts asynchronously and keeps no history:
	// publish until the first copy arrives.
	subject := eventplane.Subject("kvrouter", "m", 3)
	eventplanetest.WaitFor(t, 10*time.Second, "tailed events", func() bool {
		if err := conn.NC.Publish(subject, []byte("not an envelope")); err != nil {
			t.Fatal(err)
		}
		if err := conn.NC.Publish(subject, payload); err != nil {
			t.Fatal(err)
		}
		return strings.Contains(out.String(), want)
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Tail after cancel: %v", err)
	}
	// Only whole copies of the envelope's lines, nothing from the bad message.
	if got := out.String(); strings.ReplaceAll(got, want, "") != "" {
		t.Fatalf("output has more than copies of the events:\n%s", got)
	}
}

func TestTailSourceErrors(t *testing.T) {
	for _, c := range []struct {
		cfg  TailConfig
		want string
	}{
		{TailConfig{}, "give --nats URL or --zmq ENDPOINT"},
		{TailConfig{NATS: eventplane.Config{URL: "nats://127.0.0.1:1"}, ZMQ: "tcp://127.0.0.1:1"}, "not both"},
	} {
		err := Tail(context.Background(), c.cfg, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err %v, want %q", c.cfg, err, c.want)
		}
	}
}
