package kvevents

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// FuzzDecodeJSON: arbitrary input never panics; whatever decodes re-encodes
// canonically, and the canonical form is a fixed point.
func FuzzDecodeJSON(f *testing.F) {
	for _, ev := range sampleEvents() {
		f.Add(AppendJSON(nil, &ev))
	}
	if b, err := os.ReadFile("testdata/events.jsonl"); err == nil {
		for _, line := range bytes.Split(b, []byte("\n")) {
			f.Add(line)
		}
	}
	f.Add([]byte(`{"worker_id":1,"event":{"event_id":2,"data":{"cleared":null}},"x":[{"y":"\u00e9"}]}`))
	f.Add([]byte(`{"worker_id":1,"kv_cache_group":{"index":1,"kind":"mamba","x":null},"event":{"event_id":2,"data":{"removed":{"block_hashes":[3]}}}}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		var ev Event
		if err := DecodeJSON(in, &ev); err != nil {
			return
		}
		if err := ev.Validate(); err != nil {
			t.Fatalf("decoded an invalid event %+v: %v", ev, err)
		}
		enc := AppendJSON(nil, &ev)
		var again Event
		if err := DecodeJSON(enc, &again); err != nil {
			t.Fatalf("re-decode %s: %v", enc, err)
		}
		if enc2 := AppendJSON(nil, &again); !bytes.Equal(enc, enc2) {
			t.Fatalf("not a fixed point:\n%s\n%s", enc, enc2)
		}
		if !bytes.Equal(AppendJSON(nil, &again), AppendJSON(nil, &ev)) {
			t.Fatal("unreachable")
		}
		// The msgpack codec agrees.
		var viaMP Event
		if err := DecodeMsgpack(AppendMsgpack(nil, &ev), &viaMP); err != nil || !bytes.Equal(AppendJSON(nil, &viaMP), enc) {
			t.Fatalf("msgpack disagrees: %v", err)
		}
	})
}

// FuzzDecodeMsgpack: as FuzzDecodeJSON, for msgpack.
func FuzzDecodeMsgpack(f *testing.F) {
	for _, ev := range sampleEvents() {
		f.Add(AppendMsgpack(nil, &ev))
	}
	f.Add(mp(f, map[string]any{"worker_id": -1, "event": map[string]any{"event_id": 1.5}}))
	f.Add(mp(f, map[string]any{"worker_id": 1, "kv_cache_group": map[string]any{"index": 1, "kind": "sliding_window", "sliding_window": 9},
		"event": map[string]any{"event_id": 1, "data": map[string]any{"removed": map[string]any{"block_hashes": []any{1}}}}}))
	f.Fuzz(func(t *testing.T, in []byte) {
		var ev Event
		if err := DecodeMsgpack(in, &ev); err != nil {
			return
		}
		if err := ev.Validate(); err != nil {
			t.Fatalf("decoded an invalid event %+v: %v", ev, err)
		}
		enc := AppendMsgpack(nil, &ev)
		var again Event
		if err := DecodeMsgpack(enc, &again); err != nil {
			t.Fatalf("re-decode %x: %v", enc, err)
		}
		if enc2 := AppendMsgpack(nil, &again); !bytes.Equal(enc, enc2) {
			t.Fatalf("not a fixed point:\n%x\n%x", enc, enc2)
		}
		_, _ = DecodeMsgpackEvents(nil, in)
	})
}

// FuzzDecodeVLLM: arbitrary payloads never panic; a structural error returns
// no events; every returned event is valid, stamped with the worker, and its
// stores' blocks carry locals.
func FuzzDecodeVLLM(f *testing.F) {
	paths, _ := filepath.Glob("testdata/*.hex")
	for _, p := range paths {
		f.Add(readHex(f, p))
	}
	f.Add(mp(f, []any{1.0, []any{[]any{"BlockStored", []any{[]byte{1}}, -5, []any{[]any{1, 2}, []any{2, 3}, []any{3, 4}, []any{4, 5}}, 4, nil, "CPU", "l", []any{nil}, 1, "full_attention"}}, 1}))
	// KV cache groups: windows, unknown kinds, removes by group_idx alone,
	// values of unexpected types.
	f.Add(mp(f, []any{1.0, []any{
		[]any{"BlockStored", []any{1}, nil, []any{0, 1, 2, 3}, 4, nil, nil, nil, nil, 1, "sliding_window", 8, "x"},
		[]any{"BlockStored", []any{1}, nil, []any{0, 1, 2, 3}, 4, nil, nil, nil, nil, 2, "mamba", 8},
		[]any{"BlockStored", []any{1}, nil, []any{0, 1, 2, 3}, 4, nil, nil, nil, nil, -1, 5, "w"},
		[]any{"BlockRemoved", []any{1}, nil, 1}, []any{"BlockRemoved", []any{1}, nil, 2}, []any{"BlockRemoved", []any{1}, nil, 3},
	}}))
	f.Add(mp(f, map[string]any{"ts": 1, "events": []any{
		map[string]any{"type": "BlockStored", "block_hashes": []any{2}, "token_ids": []any{0, 1, 2, 3}, "block_size": 4,
			"group_idx": 63, "kv_cache_spec_kind": "sliding_window_mla", "kv_cache_spec_sliding_window": uint64(1 << 40)},
		map[string]any{"type": "BlockStored", "block_hashes": []any{2}, "token_ids": []any{0, 1, 2, 3}, "block_size": 4,
			"group_idx": 64, "kv_cache_spec_kind": "chunked_local_attention"},
		map[string]any{"type": "BlockRemoved", "block_hashes": []any{2}, "group_idx": 63},
		map[string]any{"type": "BlockRemoved", "block_hashes": []any{2}, "group_idx": 64},
	}}))
	f.Fuzz(func(t *testing.T, in []byte) {
		d, err := NewVLLMDecoder(VLLMConfig{BlockSize: 4, WorkerID: 3, DPRank: 1})
		if err != nil {
			t.Fatal(err)
		}
		prefix := []Event{{WorkerID: 42, Kind: KindCleared}}
		evs, info, err := d.DecodeBatch(prefix, in)
		if len(evs) < 1 || evs[0].WorkerID != 42 {
			t.Fatal("dst prefix clobbered")
		}
		if err != nil && info.Events == 0 && len(evs) != 1 {
			t.Fatalf("structural error %v returned events", err)
		}
		for _, ev := range evs[1:] {
			if ev.WorkerID != 3 || ev.EventID != 0 {
				t.Fatalf("bad stamp %+v", ev)
			}
			if err := ev.Validate(); err != nil {
				t.Fatalf("invalid event %+v: %v", ev, err)
			}
			if ev.Kind == KindStored && len(ev.Blocks) == 0 {
				t.Fatal("empty store returned")
			}
		}
		if got := len(evs) - 1 + info.Skipped + info.Failed; err == nil && got != info.Events {
			t.Fatalf("accounting: %d returned+skipped+failed vs %d events", got, info.Events)
		}
		if info.UnknownGroups > info.Skipped {
			t.Fatalf("accounting: %d unknown groups > %d skipped", info.UnknownGroups, info.Skipped)
		}
		// Group decoding is deterministic: a fresh decoder that first sees
		// the same payload twice agrees with itself on the second pass
		// (what the first pass taught it is stable).
		d2, _ := NewVLLMDecoder(VLLMConfig{BlockSize: 4, WorkerID: 3, DPRank: 1})
		_, _, _ = d2.DecodeBatch(nil, in)
		again, _, _ := d2.DecodeBatch(nil, in)
		_, _, _ = d.DecodeBatch(nil, in)
		third, _, _ := d.DecodeBatch(nil, in)
		if len(again) != len(third) {
			t.Fatalf("learning not deterministic: %d vs %d events", len(again), len(third))
		}
	})
}
