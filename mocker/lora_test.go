package mocker_test

import (
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/kvhash"
	"github.com/kvrouter/kvrouter/mocker"
)

// TestLoRAHashes: a request under an adapter stores its blocks with the
// adapter's seed (what the router hashes for it), so the same prompt
// under another adapter or the base model shares none of them.
func TestLoRAHashes(t *testing.T) {
	cfg := mocker.DefaultConfig()
	e := mocker.New(cfg)
	prompt := make([]uint32, 4*cfg.BlockSize)
	for i := range prompt {
		prompt[i] = uint32(i)
	}
	now := time.Duration(0)
	var stored []kvevents.Event
	var cached []int
	for id, lora := range []string{"sql", "chat", "", "sql"} {
		if err := e.Add(mocker.Request{ID: uint64(id + 1), Tokens: prompt, MaxOutputTokens: 1, LoRA: lora, Arrival: now}); err != nil {
			t.Fatal(err)
		}
		for e.Busy() {
			r := e.Step(now)
			for _, ev := range r.Events {
				if ev.Kind == kvevents.KindStored {
					stored = append(stored, ev)
				}
			}
			for _, f := range r.Finished {
				cached = append(cached, f.CachedTokens)
			}
			now = r.End()
		}
	}
	if len(cached) != 4 || cached[0] != 0 || cached[1] != 0 || cached[2] != 0 || cached[3] == 0 {
		t.Fatalf("cached tokens per request %v: want 0, 0, 0, then a hit for sql again", cached)
	}
	want := kvhash.LocalHashes(prompt, cfg.BlockSize, kvhash.Seed("sql", ""))
	if len(stored) == 0 || len(stored[0].Blocks) == 0 {
		t.Fatalf("no stored event: %v", stored)
	}
	for i, b := range stored[0].Blocks {
		if i < len(want) && b.Local != want[i] {
			t.Fatalf("block %d local %x, want the sql-seeded %x", i, b.Local, want[i])
		}
	}
}
