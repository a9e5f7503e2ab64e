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
	"github.com/kvrouter/kvrouter/kvhash"
	"github.com/kvrouter/kvrouter/tokenizer"
)

// TestZMQPublisherInterop publishes through the vLLM-format ZMQ PUB and
// reads it back with kvrouter's own ZMQ subscriber: the Stored blocks that
// arrive (local hashes recomputed from token_ids) equal the engine's.
func TestZMQPublisherInterop(t *testing.T) {
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
	cfg.Engine.NumBlocks, cfg.Engine.BlockSize, cfg.Engine.SpeedupRatio = 256, 16, 0
	cfg.Engine.Worker = kvevents.Worker{ID: 3}
	cfg.MaxLoRAs = 2
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() { cancel(); <-done }()
	hs := httptest.NewServer(s.Handler())
	defer hs.Close()

	got := make(chan kvevents.Event, 1024)
	sub := zmqsub.New(zmqsub.Config{BlockSize: 16, Logger: log,
		Sources: []zmqsub.Source{{WorkerID: 3, Endpoint: "tcp://" + strings.TrimPrefix(zp.PubAddr(), "tcp://")}}},
		zmqsub.SinkFunc(func(ev *kvevents.Event) error { got <- *ev; return nil }))
	subDone := make(chan error, 1)
	go func() { subDone <- sub.Run(ctx) }()
	defer func() { cancel(); <-subDone }()

	// PUB/SUB drops messages until the subscription is up: send distinct
	// prompts until one comes through.
	warm := time.After(20 * time.Second)
	for i := 0; ; i++ {
		post(t, hs.URL+"/v1/completions", fmt.Sprintf(`{"prompt":[%s],"max_tokens":1}`, strings.Repeat(fmt.Sprintf("%d,", 1000+i), 31)+"1"))
		select {
		case <-got:
		case <-time.After(50 * time.Millisecond):
			select {
			case <-warm:
				t.Fatal("no event over ZMQ")
			default:
			}
			continue
		}
		break
	}
	for len(got) > 0 {
		<-got
	}
	// 40 prompt tokens + 30 generated = 70 tokens: blocks from both; the
	// second prompt with a cache_salt, which the ZMQ events carry in their
	// first block's extra_keys (vLLM's layout).
	check := func(tok int, salt, lora string) {
		t.Helper()
		n := len(rec.events())
		// A warm-up prompt's batch may still be on its way (the drain above
		// takes only what has arrived): its blocks are the engine's events
		// before n, and are skipped below by their first block.
		warmed := map[uint64]bool{}
		for _, ev := range rec.events()[:n] {
			if ev.Kind == kvevents.KindStored && len(ev.Blocks) > 0 {
				warmed[ev.Blocks[0].Hash] = true
			}
		}
		extra := ""
		if salt != "" {
			extra = `,"cache_salt":"` + salt + `"`
		}
		seed := kvhash.DefaultSeed
		if lora != "" {
			extra += `,"model":"` + lora + `"`
			seed = kvhash.Seed(lora, "")
		}
		post(t, hs.URL+"/v1/completions", `{"prompt":[`+strings.Repeat(fmt.Sprintf("%d,", tok), 39)+fmt.Sprint(tok)+`],"max_tokens":30`+extra+`}`)
		want := rec.events()[n:]
		var wantBlocks, gotBlocks []kvevents.Block
		for _, ev := range want {
			if ev.Kind == kvevents.KindStored {
				wantBlocks = append(wantBlocks, ev.Blocks...)
			}
		}
		if len(wantBlocks) < 4 {
			t.Fatalf("engine stored only %d blocks", len(wantBlocks))
		}
		first := make([]uint32, 16)
		for i := range first {
			first[i] = uint32(tok)
		}
		if w := kvhash.SaltFirst(kvhash.Local(first, seed), salt); wantBlocks[0].Local != w {
			t.Fatalf("salt %q: engine's first block local %d, want %d", salt, wantBlocks[0].Local, w)
		}
		timeout := time.After(10 * time.Second)
		for len(gotBlocks) < len(wantBlocks) {
			select {
			case ev := <-got:
				if ev.Kind == kvevents.KindStored && len(ev.Blocks) > 0 && !warmed[ev.Blocks[0].Hash] {
					gotBlocks = append(gotBlocks, ev.Blocks...)
				}
			case <-timeout:
				t.Fatalf("got %d of %d blocks over ZMQ", len(gotBlocks), len(wantBlocks))
			}
		}
		for i := range wantBlocks {
			if gotBlocks[i] != wantBlocks[i] {
				t.Fatalf("salt %q: block %d: zmq %+v, engine %+v", salt, i, gotBlocks[i], wantBlocks[i])
			}
		}
	}
	check(9, "", "")
	check(8, "tenant-a", "")
	// An adapter's blocks: seeded by its name, lora_name on the wire.
	check(7, "", "sql")
	check(6, "tenant-b", "sql")
}

// TestZMQGroups: a hybrid model's events carry their KV cache group in
// vLLM's fields (group_idx, kv_cache_spec_kind, kv_cache_spec_sliding_window
// on stores, group_idx alone on removes), and kvrouter's vLLM decoder reads
// every group back; full-attention group 0 events keep the short form.
func TestZMQGroups(t *testing.T) {
	z := &ZMQPublisher{bs: 4}
	toks := [][]uint32{{0, 1, 2, 3}, {4, 5, 6, 7}}
	blocks := []kvevents.Block{{Hash: 10}, {Hash: 11}}
	evs := []kvevents.Event{
		{Kind: kvevents.KindStored, Blocks: blocks},
		{Kind: kvevents.KindStored, Group: kvevents.Group{Index: 1, Kind: kvevents.GroupSliding, Window: 8}, Blocks: blocks},
		{Kind: kvevents.KindStored, Group: kvevents.Group{Index: 2, Kind: kvevents.GroupState}, HasParent: true, Parent: 10, Blocks: blocks[1:]},
		{Kind: kvevents.KindRemoved, Group: kvevents.Group{Index: 1, Kind: kvevents.GroupSliding, Window: 8}, Hashes: []uint64{10}},
		{Kind: kvevents.KindRemoved, Group: kvevents.Group{Index: 2, Kind: kvevents.GroupState}, Hashes: []uint64{11}},
		{Kind: kvevents.KindRemoved, Hashes: []uint64{11}},
	}
	dec, err := kvevents.NewVLLMDecoder(kvevents.VLLMConfig{BlockSize: 4})
	if err != nil {
		t.Fatal(err)
	}
	for i, ev := range evs {
		tk := toks
		if ev.HasParent {
			tk = toks[1:]
		}
		var salt, lora string
		if i == 1 {
			salt, lora = "tenant", "adapter" // group fields after lora_name and extra_keys
		}
		payload, err := z.encode(&ev, tk, salt, lora)
		if err != nil {
			t.Fatal(err)
		}
		got, err := dec.Decode(nil, payload)
		if err != nil || len(got) != 1 {
			t.Fatalf("event %d: %v %v", i, got, err)
		}
		if got[0].Group != ev.Group || got[0].Kind != ev.Kind || len(got[0].Blocks) != len(ev.Blocks) ||
			fmt.Sprint(got[0].Hashes) != fmt.Sprint(ev.Hashes) {
			t.Fatalf("event %d: got %s, want %s", i, got[0], ev)
		}
	}
	// Full-attention group 0 writes no group fields: vLLM's short form.
	payload, err := z.encode(&evs[0], toks, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(payload), "full_attention") {
		t.Fatalf("group 0 event carries group fields: %x", payload)
	}
}
