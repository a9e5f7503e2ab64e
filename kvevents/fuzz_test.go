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
	})
}
