package app

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/kvrouter/kvrouter/internal/discovery"
	"github.com/kvrouter/kvrouter/internal/eventplane/zmqsub"
	"github.com/kvrouter/kvrouter/kvhash"
	"github.com/vmihailenco/msgpack/v5"
)

func TestResolvePod(t *testing.T) {
	ws := []discovery.Worker{
		{ID: 1, URL: "http://10.0.0.5:8000"},
		{ID: 2, URL: "http://10.0.0.6:8000", Model: "other"},
		{ID: 3, URL: "http://10.0.0.7:8000"},
		{ID: 4, URL: "http://10.0.0.7:8001"},
		{ID: 5, URL: "http://svc.local:80", Pod: "pod-a"},
	}
	for _, tc := range []struct {
		pod, model string
		id         uint64
		err        error
	}{
		{"10.0.0.5:8000", "m", 1, nil},
		{"10.0.0.5", "m", 1, nil}, // vLLM's kv@${POD_IP}@model
		{"10.0.0.5", "", 1, nil},  // no model in the topic: not checked
		{"10.0.0.5", "x", 1, zmqsub.ErrModelMismatch},
		{"10.0.0.6", "other", 2, nil},
		{"10.0.0.6", "m", 2, zmqsub.ErrModelMismatch},
		{"10.0.0.7:8001", "m", 4, nil},
		{"10.0.0.7", "m", 0, zmqsub.ErrUnknownPod}, // two engines on that host
		{"pod-a", "m", 5, nil},
		{"svc.local:80", "m", 0, zmqsub.ErrUnknownPod}, // pod= replaces the URL
		{"10.0.0.9", "m", 0, zmqsub.ErrUnknownPod},
	} {
		id, err := resolvePod(ws, tc.pod, tc.model, "m")
		if id != tc.id || !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
			t.Errorf("resolvePod(%q, %q) = %d, %v; want %d, %v", tc.pod, tc.model, id, err, tc.id, tc.err)
		}
	}
}

// vllmBatch is a vLLM msgpack batch storing the blocks of toks (a chain
// from the root) with the given engine block size.
func vllmBatch(t *testing.T, toks []uint32, bs int) []byte {
	t.Helper()
	locals := kvhash.LocalHashes(toks, bs, kvhash.Seed("", ""))
	hashes := make([]uint64, len(locals))
	for i := range hashes {
		hashes[i] = uint64(i+1) * 7919
	}
	b, err := msgpack.Marshal([]any{float64(time.Now().UnixNano()) / 1e9,
		[]any{[]any{"BlockStored", hashes, nil, toks, bs, nil, "GPU"}}, 0})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestServeZMQBind: serve --zmq-bind binds one SUB; an engine connects its
// PUB to it with topic kv@<its URL host:port>@<model>, and its blocks land
// on that static worker. An engine of another block size is refused and
// counted on /metrics (kvrouter_events_rejected_total{reason="block_size"})
// and in /debug/index.
func TestServeZMQBind(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	bind := fmt.Sprintf("tcp://127.0.0.1:%d", freePort(t))
	cfg := DefaultServeConfig()
	cfg.Listen = "127.0.0.1:0"
	cfg.ZMQBind = []string{bind}
	cfg.Workers = []string{"http://127.0.0.1:1,id=1", "http://127.0.0.1:2,id=2,pod=engine-b"}
	cfg.Frontend.LoadPollInterval = -1
	cfg.Logger = quiet
	s := runServe(t, ctx, "serve", cfg)

	pub := zmq4.NewPub(ctx)
	defer pub.Close()
	if err := pub.Dial(bind); err != nil {
		t.Fatal(err)
	}
	toks := make([]uint32, 2*DefaultBlockSize)
	for i := range toks {
		toks[i] = uint32(500 + i)
	}
	good := vllmBatch(t, toks, DefaultBlockSize)
	bad := vllmBatch(t, toks[:32], 16)
	seq := int64(0)
	send := func(topic string, payload []byte) {
		var sb [8]byte
		binary.BigEndian.PutUint64(sb[:], uint64(seq))
		seq++
		if err := pub.Send(zmq4.NewMsgFrom([]byte(topic), sb[:], payload)); err != nil {
			t.Fatal(err)
		}
	}
	blocks := func(w uint64) int {
		for _, x := range s.Frontend().IndexSummaries().Workers {
			if x.Worker == w {
				return x.Total
			}
		}
		return 0
	}
	// ZMQ's slow joiner: messages sent before the subscription reached the
	// PUB are lost, so send until they arrive (each send is a new seq: a
	// gap clears and re-stores the same blocks).
	waitUntil(t, 20*time.Second, "bind-mode events indexed", func() (bool, string) {
		send("kv@127.0.0.1:1@"+DefaultModel, good)
		send("kv@engine-b@"+DefaultModel, bad)
		ok := blocks(1) == 2 && s.Frontend().IngestCounts(2)["block_size"] > 0
		return ok, fmt.Sprintf("worker 1 holds %d blocks; worker 2 counts %v", blocks(1), s.Frontend().IngestCounts(2))
	})
	if blocks(2) != 0 {
		t.Fatalf("worker 2 indexed blocks of a mismatched block size")
	}
	_, body := getBody(t, s.URL()+"/metrics")
	if !strings.Contains(body, `kvrouter_events_rejected_total{reason="block_size"}`) {
		t.Fatalf("/metrics lacks the block-size rejections:\n%s", grepLines(body, "kvrouter_event"))
	}
	_, dbg := getBody(t, s.URL()+"/debug/index")
	if !strings.Contains(dbg, `"ingest":{`) || !strings.Contains(dbg, `"block_size":`) {
		t.Fatalf("/debug/index lacks the per-worker ingest counts: %s", dbg)
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
