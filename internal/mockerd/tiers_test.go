package mockerd

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/internal/eventplane/zmqsub"
	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/mocker"
	"github.com/kvrouter/kvrouter/tokenizer"
)

// TestMediumRoundTrip: every tier's ZMQ medium maps back to the tier on
// ingest (kvevents.MediumTier).
func TestMediumRoundTrip(t *testing.T) {
	for tr := range kvevents.NumTiers {
		if got := kvevents.MediumTier(Medium(kvevents.Tier(tr))); got != kvevents.Tier(tr) {
			t.Errorf("%s -> %q -> %s", kvevents.Tier(tr), Medium(kvevents.Tier(tr)), got)
		}
	}
}

// TestZMQTiers: a real-time mocker with a host tier, publishing both to a
// sink and vLLM-style on ZMQ. Prompts evict each other from a 16-block
// G1; the evicted blocks are offloaded to the host after their requests
// finished (the idle engine's pipeline still commits), and the host
// stores arrive over ZMQ with medium CPU, as host-tier stores carrying
// the same blocks as the sink's (token ids kept while a tier held them),
// with no publish error.
func TestZMQTiers(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	zp, err := NewZMQPublisher(ctx, "tcp://127.0.0.1:0", "", 16, log)
	if err != nil {
		t.Fatal(err)
	}
	defer zp.Close()
	tok, err := tokenizer.Default(tokenizer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	cfg := DefaultConfig()
	cfg.Tokenizer, cfg.ZMQ, cfg.Sinks, cfg.Logger = tok, zp, []EventSink{rec}, log
	cfg.Engine.NumBlocks, cfg.Engine.BlockSize, cfg.Engine.SpeedupRatio, cfg.Engine.Watermark = 16, 16, 0, 0
	cfg.Engine.Worker = kvevents.Worker{ID: 3}
	cfg.Engine.Tiers = mocker.TierConfig{HostBlocks: 64}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() { cancel(); <-done }()
	hs := httptest.NewServer(s.Handler())
	defer hs.Close()

	got := make(chan kvevents.Event, 4096)
	sub := zmqsub.New(zmqsub.Config{BlockSize: 16, Logger: log,
		Sources: []zmqsub.Source{{WorkerID: 3, Endpoint: "tcp://" + strings.TrimPrefix(zp.PubAddr(), "tcp://")}}},
		zmqsub.SinkFunc(func(ev *kvevents.Event) error { got <- *ev; return nil }))
	subDone := make(chan error, 1)
	go func() { subDone <- sub.Run(ctx) }()
	defer func() { cancel(); <-subDone }()
	warm := time.After(20 * time.Second)
	for i := 0; ; i++ {
		post(t, hs.URL+"/v1/completions", fmt.Sprintf(`{"prompt":[%s],"max_tokens":1}`, strings.Repeat(fmt.Sprintf("%d,", 1000+i), 15)+"1"))
		select {
		case <-got:
		case <-time.After(50 * time.Millisecond):
			select {
			case <-warm:
				t.Fatalf("no event over ZMQ (%d sink events, %d publish errors)", len(rec.events()), s.pubErr.Load())
			default:
			}
			continue
		}
		break
	}
	n := len(rec.events())
	for p := range 4 {
		post(t, hs.URL+"/v1/completions", `{"prompt":[`+strings.Repeat(fmt.Sprintf("%d,", 50+p), 159)+`7],"max_tokens":1}`)
	}
	hostStores := func(evs []kvevents.Event) (bs []kvevents.Block) {
		for _, ev := range evs {
			if ev.Kind == kvevents.KindStored && ev.Tier == kvevents.TierHostPinned {
				bs = append(bs, ev.Blocks...)
			}
		}
		return bs
	}
	var zmqHost []kvevents.Block
	timeout := time.After(20 * time.Second)
	for {
		want := hostStores(rec.events()[n:])
		if len(want) >= 20 && len(zmqHost) >= len(want) {
			for i := range want {
				if zmqHost[i] != want[i] {
					t.Fatalf("host block %d: zmq %+v, sink %+v", i, zmqHost[i], want[i])
				}
			}
			break
		}
		select {
		case ev := <-got:
			if ev.Kind == kvevents.KindStored && ev.Tier == kvevents.TierHostPinned {
				zmqHost = append(zmqHost, ev.Blocks...)
			}
		case <-timeout:
			t.Fatalf("sink has %d host blocks, zmq %d", len(want), len(zmqHost))
		}
	}
	if e := s.pubErr.Load(); e != 0 {
		t.Fatalf("%d publish errors", e)
	}
}
