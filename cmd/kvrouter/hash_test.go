package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/vmihailenco/msgpack/v5"
)

func runHash(t *testing.T, args ...string) string {
	t.Helper()
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(append([]string{"hash"}, args...))
	if err := root.Execute(); err != nil {
		t.Fatalf("hash %v: %v\n%s", args, err, out.String())
	}
	return out.String()
}

// TestHashLoRAGolden: `kvrouter hash --lora NAME` prints the local hashes
// the router computes for a request whose model is the LoRA adapter NAME,
// and they equal the local hashes the vLLM event decoder derives from a
// BlockStored event carrying lora_name NAME (vLLM keys an adapter's blocks
// by its lora_name; the simulator and vLLM both publish it), so the
// router's salted lookups find the engine's adapter blocks. The values are
// golden: a change to the salting breaks them.
func TestHashLoRAGolden(t *testing.T) {
	const bs = 4
	tokens := []uint32{0, 1, 2, 3, 4, 5, 6, 7}
	args := []string{"--block-size", "4"}
	for _, tk := range tokens {
		args = append(args, fmt.Sprint(tk))
	}
	plain := runHash(t, args...)
	salted := runHash(t, append([]string{"--lora", "sql-lora"}, args...)...)
	const want = "0 2536401604203606606 2536401604203606606\n1 15986780935621351261 11852724217320681974\n"
	if salted != want {
		t.Errorf("hash --lora sql-lora:\n got %q\nwant %q", salted, want)
	}
	if plain == salted {
		t.Fatal("the LoRA name changed no hash")
	}

	// vLLM's array-form BlockStored event for the same blocks under the
	// adapter: [tag, block_hashes, parent, token_ids, block_size, lora_id,
	// medium, lora_name].
	ev := []any{"BlockStored", []any{uint64(11), uint64(12)}, nil, tokens, bs, 1, "GPU", "sql-lora"}
	payload, err := msgpack.Marshal([]any{1.0, []any{ev}, 0})
	if err != nil {
		t.Fatal(err)
	}
	dec, err := kvevents.NewVLLMDecoder(kvevents.VLLMConfig{BlockSize: bs, WorkerID: 1})
	if err != nil {
		t.Fatal(err)
	}
	evs, err := dec.Decode(nil, payload)
	if err != nil || len(evs) != 1 || len(evs[0].Blocks) != 2 {
		t.Fatalf("decode: %v %+v", err, evs)
	}
	var fromEvent strings.Builder
	for i, b := range evs[0].Blocks {
		fmt.Fprintf(&fromEvent, "%d %d\n", i, b.Local)
	}
	var fromCmd strings.Builder
	for _, line := range strings.Split(strings.TrimSpace(salted), "\n") {
		f := strings.Fields(line)
		fmt.Fprintf(&fromCmd, "%s %s\n", f[0], f[1])
	}
	if fromEvent.String() != fromCmd.String() {
		t.Errorf("local hashes from the engine's event\n%s differ from hash --lora\n%s", fromEvent.String(), fromCmd.String())
	}
}
