package kvevents

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"reflect"
	"strings"
	"testing"
)

// sampleEvents covers every kind, tier and optional field, with extreme
// values.
func sampleEvents() []Event {
	return []Event{
		{WorkerID: 1, EventID: 7, Kind: KindStored, Blocks: []Block{{Hash: 1, Local: 2}}},
		{WorkerID: math.MaxUint64, Tier: TierHostPinned, EventID: math.MaxUint64, DPRank: math.MaxUint32,
			Kind: KindStored, HasParent: true, Parent: math.MaxUint64, HasStart: true, StartPosition: math.MaxUint32,
			Blocks: []Block{{Hash: 1 << 63, Local: math.MaxUint64}, {Hash: 0, Local: 9007199254740993}}},
		{WorkerID: 3, Tier: TierDisk, EventID: 1, Kind: KindStored, HasParent: true, Parent: 0, Blocks: []Block{}},
		{WorkerID: 4, Tier: TierExternal, EventID: 2, DPRank: 5, Kind: KindRemoved, Hashes: []uint64{1, 18446744073709551615, 9007199254740993}},
		{WorkerID: 5, EventID: 3, Kind: KindRemoved, Hashes: []uint64{}},
		{WorkerID: 6, EventID: 4, DPRank: 1, Kind: KindCleared},
		// Hybrid models' kv cache groups (DESIGN.md §13).
		{WorkerID: 7, EventID: 5, Kind: KindStored, Group: Group{Index: 1, Kind: GroupSliding, Window: math.MaxUint32},
			HasParent: true, Parent: 9, Blocks: []Block{{Hash: 10, Local: 11}}},
		{WorkerID: 8, Tier: TierHostPinned, EventID: 6, Kind: KindRemoved, Group: Group{Index: math.MaxUint32, Kind: GroupState},
			Hashes: []uint64{12}},
		{WorkerID: 9, EventID: 7, Kind: KindRemoved, Group: Group{Kind: GroupSliding}, Hashes: []uint64{13}},
		{WorkerID: 10, EventID: 8, Kind: KindStored, Group: Group{Index: 2}, Blocks: []Block{{Hash: 14, Local: 15}}},
	}
}

// TestJSONGroup: the kv_cache_group key's exact form, its absence for the
// zero group, and that a decoder that skips the key (as Dynamo's serde and
// older kvrouter do) reads the rest of the event unchanged.
func TestJSONGroup(t *testing.T) {
	ev := Event{WorkerID: 1, EventID: 7, Kind: KindStored, Group: Group{Index: 1, Kind: GroupSliding, Window: 128},
		Blocks: []Block{{Hash: 1, Local: 2}}}
	want := `{"worker_id":1,"storage_tier":"device","kv_cache_group":{"index":1,"kind":"sliding_window","sliding_window":128},"event":{"event_id":7,"data":{"stored":{"parent_hash":null,"start_position":null,"blocks":[{"block_hash":1,"tokens_hash":2}]}},"dp_rank":0}}`
	if got := string(AppendJSON(nil, &ev)); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	rm := Event{WorkerID: 1, EventID: 8, Kind: KindRemoved, Group: Group{Index: 2, Kind: GroupState}, Hashes: []uint64{1}}
	want = `{"worker_id":1,"storage_tier":"device","kv_cache_group":{"index":2,"kind":"mamba"},"event":{"event_id":8,"data":{"removed":{"block_hashes":[1]}},"dp_rank":0}}`
	if got := string(AppendJSON(nil, &rm)); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	for _, e := range sampleEvents() {
		enc := AppendJSON(nil, &e)
		if has := bytes.Contains(enc, []byte("kv_cache_group")); has == e.Group.IsZero() {
			t.Fatalf("%s: kv_cache_group present=%v for group %s", enc, has, e.Group)
		}
		// An old decoder: the same bytes without the key.
		var generic map[string]json.RawMessage
		if err := json.Unmarshal(enc, &generic); err != nil {
			t.Fatal(err)
		}
		delete(generic, "kv_cache_group")
		old, _ := json.Marshal(generic)
		var got Event
		if err := DecodeJSON(old, &got); err != nil {
			t.Fatal(err)
		}
		e.Group = Group{}
		if !reflect.DeepEqual(got, e) {
			t.Fatalf("without the key: got %+v want %+v", got, e)
		}
	}
	lenient := `{"kv_cache_group":{"future":[1],"sliding_window":0,"kind":"full_attention","index":3},"worker_id":1,"event":{"event_id":2,"data":{"removed":{"block_hashes":[]}}}}`
	var got Event
	if err := DecodeJSON([]byte(lenient), &got); err != nil || got.Group != (Group{Index: 3}) {
		t.Fatalf("lenient: %+v %v", got, err)
	}
	if err := DecodeJSON([]byte(`{"kv_cache_group":null,"worker_id":1,"event":{"event_id":2,"data":"cleared"}}`), &got); err != nil || !got.Group.IsZero() {
		t.Fatalf("null group: %+v %v", got, err)
	}
	for name, in := range map[string]string{
		"unknown kind":     `{"index":1,"kind":"chunked_local_attention"}`,
		"missing kind":     `{"index":1}`,
		"window on mamba":  `{"index":1,"kind":"mamba","sliding_window":4}`,
		"index overflow":   `{"index":4294967296,"kind":"mamba"}`,
		"negative window":  `{"kind":"sliding_window","sliding_window":-1}`,
		"kind not string":  `{"kind":1}`,
		"group not object": `[1]`,
	} {
		in := `{"worker_id":1,"kv_cache_group":` + in + `,"event":{"event_id":2,"data":{"removed":{"block_hashes":[]}}}}`
		if err := DecodeJSON([]byte(in), &got); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: err %v", name, err)
		}
	}
	cleared := `{"worker_id":1,"kv_cache_group":{"kind":"mamba"},"event":{"event_id":2,"data":"cleared"}}`
	if err := DecodeJSON([]byte(cleared), &got); !errors.Is(err, ErrMalformed) {
		t.Errorf("group on cleared: err %v", err)
	}
}

func TestJSONEncodeExact(t *testing.T) {
	ev := Event{WorkerID: 1, EventID: 7, Kind: KindStored, Blocks: []Block{{Hash: 1, Local: 2}}}
	want := `{"worker_id":1,"storage_tier":"device","event":{"event_id":7,"data":{"stored":{"parent_hash":null,"start_position":null,"blocks":[{"block_hash":1,"tokens_hash":2}]}},"dp_rank":0}}`
	if got := string(AppendJSON(nil, &ev)); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	rm := Event{WorkerID: 2, Tier: TierDisk, EventID: 3, DPRank: 4, Kind: KindRemoved, Hashes: []uint64{18446744073709551615}}
	want = `{"worker_id":2,"storage_tier":"disk","event":{"event_id":3,"data":{"removed":{"block_hashes":[18446744073709551615]}},"dp_rank":4}}`
	if got := string(AppendJSON(nil, &rm)); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	cl := Event{WorkerID: 2, EventID: 3, Kind: KindCleared}
	want = `{"worker_id":2,"storage_tier":"device","event":{"event_id":3,"data":"cleared","dp_rank":0}}`
	if got := string(AppendJSON(nil, &cl)); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestJSONRoundTrip(t *testing.T) {
	for _, ev := range sampleEvents() {
		enc := AppendJSON(nil, &ev)
		var got Event
		if err := DecodeJSON(enc, &got); err != nil {
			t.Fatalf("%s: %v", enc, err)
		}
		if !reflect.DeepEqual(got, ev) {
			t.Fatalf("round trip of %s:\n got  %+v\n want %+v", enc, got, ev)
		}
		// encoding/json goes through MarshalJSON / UnmarshalJSON.
		std, err := json.Marshal(ev)
		if err != nil || string(std) != string(enc) {
			t.Fatalf("json.Marshal = %s, %v; want %s", std, err, enc)
		}
		var viaStd Event
		if err := json.Unmarshal(std, &viaStd); err != nil || !reflect.DeepEqual(viaStd, ev) {
			t.Fatalf("json.Unmarshal = %+v, %v", viaStd, err)
		}
	}
}

// dynamoShape mirrors Dynamo's serde structs with encoding/json tags: an
// independent encoder to check the field names against.
type dynamoShape struct {
	WorkerID    uint64 `json:"worker_id"`
	StorageTier string `json:"storage_tier,omitempty"`
	Event       struct {
		EventID uint64 `json:"event_id"`
		Data    any    `json:"data"`
		DPRank  uint32 `json:"dp_rank"`
	} `json:"event"`
}

func TestJSONDecodesIndependentEncoding(t *testing.T) {
	var d dynamoShape
	d.WorkerID = math.MaxUint64
	d.StorageTier = "host_pinned"
	d.Event.EventID = 12
	d.Event.DPRank = 3
	parent := uint64(1<<63 + 5)
	d.Event.Data = map[string]any{"stored": map[string]any{
		"parent_hash": parent, "start_position": nil,
		"blocks": []map[string]uint64{{"block_hash": 10, "tokens_hash": math.MaxUint64}},
	}}
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var ev Event
	if err := DecodeJSON(b, &ev); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	want := Event{WorkerID: math.MaxUint64, Tier: TierHostPinned, EventID: 12, DPRank: 3, Kind: KindStored,
		HasParent: true, Parent: parent, Blocks: []Block{{Hash: 10, Local: math.MaxUint64}}}
	if !reflect.DeepEqual(ev, want) {
		t.Fatalf("got %+v\nwant %+v", ev, want)
	}
}

func TestJSONDecodeLenient(t *testing.T) {
	cases := []struct {
		name, in string
		want     Event
	}{
		{"defaults: no storage_tier, no dp_rank, no parent/start",
			`{"worker_id":1,"event":{"event_id":2,"data":{"stored":{"blocks":[{"block_hash":3,"tokens_hash":4}]}}}}`,
			Event{WorkerID: 1, EventID: 2, Kind: KindStored, Blocks: []Block{{Hash: 3, Local: 4}}}},
		{"any key order, whitespace, unknown keys of every type",
			" {\"event\" : {\"dp_rank\":2, \"x\":[1,{\"y\":null},-1.5e3,true,false,\"s\\\"\"], \"data\" : \"cleared\", \"event_id\":9},\n\"residency_domain\":\"worker\",\"worker_id\":8,\"storage_tier\":\"disk\"}\n",
			Event{WorkerID: 8, Tier: TierDisk, EventID: 9, DPRank: 2, Kind: KindCleared}},
		{"cleared as a map, null storage_tier",
			`{"worker_id":1,"storage_tier":null,"event":{"event_id":2,"data":{"cleared":null}}}`,
			Event{WorkerID: 1, EventID: 2, Kind: KindCleared}},
		{"escaped key and value",
			`{"worker\u005fid":1,"storage_tier":"ho\u0073t_pinned","event":{"event_id":2,"data":{"removed":{"block_hashes":[]}}}}`,
			Event{WorkerID: 1, Tier: TierHostPinned, EventID: 2, Kind: KindRemoved, Hashes: []uint64{}}},
		{"mm_extra_info skipped",
			`{"worker_id":1,"event":{"event_id":2,"data":{"stored":{"parent_hash":null,"start_position":4,"blocks":[{"block_hash":3,"tokens_hash":4,"mm_extra_info":{"mm_objects":[{"mm_hash":1,"offsets":[[0,2]]}]}}]}}}}`,
			Event{WorkerID: 1, EventID: 2, Kind: KindStored, HasStart: true, StartPosition: 4, Blocks: []Block{{Hash: 3, Local: 4}}}},
	}
	for _, c := range cases {
		var ev Event
		if err := DecodeJSON([]byte(c.in), &ev); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !reflect.DeepEqual(ev, c.want) {
			t.Fatalf("%s:\n got  %+v\n want %+v", c.name, ev, c.want)
		}
	}
}

func TestJSONDecodeErrors(t *testing.T) {
	const ok = `{"worker_id":1,"event":{"event_id":2,"data":"cleared"}}`
	var ev Event
	if err := DecodeJSON([]byte(ok), &ev); err != nil {
		t.Fatalf("control case: %v", err)
	}
	bad := map[string]string{
		"empty":              ``,
		"not an object":      `[1]`,
		"trailing data":      ok + ` {}`,
		"trailing comma":     `{"worker_id":1,"event":{"event_id":2,"data":"cleared"},}`,
		"missing worker_id":  `{"event":{"event_id":2,"data":"cleared"}}`,
		"missing event":      `{"worker_id":1}`,
		"missing event_id":   `{"worker_id":1,"event":{"data":"cleared"}}`,
		"missing data":       `{"worker_id":1,"event":{"event_id":2}}`,
		"negative worker":    `{"worker_id":-1,"event":{"event_id":2,"data":"cleared"}}`,
		"float worker":       `{"worker_id":1.0,"event":{"event_id":2,"data":"cleared"}}`,
		"exponent":           `{"worker_id":1e3,"event":{"event_id":2,"data":"cleared"}}`,
		"leading zero":       `{"worker_id":01,"event":{"event_id":2,"data":"cleared"}}`,
		"uint64 overflow":    `{"worker_id":18446744073709551616,"event":{"event_id":2,"data":"cleared"}}`,
		"dp_rank overflow":   `{"worker_id":1,"event":{"event_id":2,"dp_rank":4294967296,"data":"cleared"}}`,
		"string number":      `{"worker_id":"1","event":{"event_id":2,"data":"cleared"}}`,
		"unknown tier":       `{"worker_id":1,"storage_tier":"gpu","event":{"event_id":2,"data":"cleared"}}`,
		"unknown variant":    `{"worker_id":1,"event":{"event_id":2,"data":"wiped"}}`,
		"unknown map var":    `{"worker_id":1,"event":{"event_id":2,"data":{"wiped":{}}}}`,
		"two variants":       `{"worker_id":1,"event":{"event_id":2,"data":{"removed":{"block_hashes":[]},"cleared":null}}}`,
		"empty data":         `{"worker_id":1,"event":{"event_id":2,"data":{}}}`,
		"missing blocks":     `{"worker_id":1,"event":{"event_id":2,"data":{"stored":{"parent_hash":null}}}}`,
		"block no local":     `{"worker_id":1,"event":{"event_id":2,"data":{"stored":{"blocks":[{"block_hash":1}]}}}}`,
		"missing hashes":     `{"worker_id":1,"event":{"event_id":2,"data":{"removed":{}}}}`,
		"start overflow":     `{"worker_id":1,"event":{"event_id":2,"data":{"stored":{"start_position":4294967296,"blocks":[]}}}}`,
		"unterminated":       `{"worker_id":1,"event":{"event_id":2,"data":"cleared"`,
		"bad literal":        `{"worker_id":1,"x":nul,"event":{"event_id":2,"data":"cleared"}}`,
		"control char":       "{\"worker_id\":1,\"x\":\"a\x01\",\"event\":{\"event_id\":2,\"data\":\"cleared\"}}",
		"bad escape":         `{"worker_id":1,"x\q":1,"event":{"event_id":2,"data":"cleared"}}`,
		"bad skipped number": `{"worker_id":1,"x":1.,"event":{"event_id":2,"data":"cleared"}}`,
		"deep nesting":       `{"worker_id":1,"x":` + strings.Repeat("[", 1000) + strings.Repeat("]", 1000) + `,"event":{"event_id":2,"data":"cleared"}}`,
	}
	for name, in := range bad {
		var ev Event
		err := DecodeJSON([]byte(in), &ev)
		if err == nil {
			t.Errorf("%s: decoded %q without error", name, in)
			continue
		}
		if !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: error %v does not wrap ErrMalformed", name, err)
		}
	}
}

func TestDecodeJSONEvents(t *testing.T) {
	evs := sampleEvents()
	var lines, arr []byte
	arr = append(arr, '[')
	for i := range evs {
		lines = AppendJSON(lines, &evs[i])
		lines = append(lines, '\n')
		if i > 0 {
			arr = append(arr, ", "...)
		}
		arr = AppendJSON(arr, &evs[i])
	}
	arr = append(arr, "]\n"...)
	for name, in := range map[string][]byte{"lines": lines, "array": arr} {
		got, err := DecodeJSONEvents(nil, in)
		if err != nil || !reflect.DeepEqual(got, evs) {
			t.Fatalf("%s: got %d events, %v", name, len(got), err)
		}
	}
	// A bad third line: the first two are returned, the error names event 2.
	bad := append(append([]byte{}, lines[:len(AppendJSON(AppendJSON(nil, &evs[0]), &evs[1]))+2]...), "{\"worker_id\":1}\n"...)
	got, err := DecodeJSONEvents(nil, bad)
	var ee *EventError
	if len(got) != 2 || !errors.As(err, &ee) || ee.Index != 2 || !errors.Is(err, ErrMalformed) {
		t.Fatalf("got %d events, err %v", len(got), err)
	}
}

func TestValidate(t *testing.T) {
	for _, ev := range sampleEvents() {
		if err := ev.Validate(); err != nil {
			t.Fatalf("%v: %v", ev, err)
		}
	}
	bad := []Event{
		{Kind: 0},
		{Kind: KindCleared, Tier: 9},
		{Kind: KindStored, Hashes: []uint64{1}},
		{Kind: KindRemoved, Blocks: []Block{{}}},
		{Kind: KindCleared, HasParent: true},
	}
	for _, ev := range bad {
		if ev.Validate() == nil {
			t.Fatalf("%+v validated", ev)
		}
		if _, err := json.Marshal(ev); err == nil {
			t.Fatalf("%+v marshalled", ev)
		}
	}
}

// TestJSONGolden decodes hand-written Dynamo-style JSON (testdata/
// events.jsonl) and checks the canonical re-encoding against
// testdata/events.golden.
func TestJSONGolden(t *testing.T) {
	in, err := os.ReadFile("testdata/events.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	evs, err := DecodeJSONEvents(nil, in)
	if err != nil {
		t.Fatal(err)
	}
	var out []byte
	for i := range evs {
		out = append(AppendJSON(out, &evs[i]), '\n')
	}
	checkGolden(t, "testdata/events.golden", out)
}
