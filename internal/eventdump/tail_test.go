package eventdump

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/internal/eventplane"
	"github.com/kvrouter/kvrouter/internal/eventplane/eventplanetest"
	"github.com/kvrouter/kvrouter/kvevents"
)

// TestTailNATS tails an embedded server over TCP: a published envelope
// comes out as its events' JSON lines, an undecodable message prints nothing,
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
	pr, pw := io.Pipe()
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default: // a copy too many; the test reads the first
			}
		}
	}()
	done := make(chan error, 1)
	go func() {
		done <- Tail(ctx, TailConfig{NATS: eventplane.Config{URL: conn.ClientURL()}, Subject: "kvrouter.*.kv.*",
			Logger: eventplanetest.Quiet}, pw)
	}()
	// The subscription starts asynchronously and keeps no history:
	// publish (a bad message, then the envelope) until a line arrives.
	subject := eventplane.Subject("kvrouter", "m", 3)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(10 * time.Second)
	var got []string
	for len(got) == 0 {
		if err := conn.NC.Publish(subject, []byte("not an envelope")); err != nil {
			t.Fatal(err)
		}
		if err := conn.NC.Publish(subject, payload); err != nil {
			t.Fatal(err)
		}
		select {
		case l := <-lines:
			got = append(got, l)
		case <-tick.C:
		case <-deadline:
			t.Fatal("no line tailed in 10s")
		}
	}
	// The envelope's events are written together: the next line is its
	// second, and the bad message printed nothing between them.
	got = append(got, <-lines)
	if strings.Join(got, "\n")+"\n" != want {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), want)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Tail after cancel: %v", err)
	}
	pw.Close()
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
