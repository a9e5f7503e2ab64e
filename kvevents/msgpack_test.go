package kvevents

import (
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

func TestMsgpackRoundTrip(t *testing.T) {
	evs := sampleEvents()
	var all []byte
	for _, ev := range evs {
		enc := AppendMsgpack(nil, &ev)
		all = append(all, enc...)
		var got Event
		if err := DecodeMsgpack(enc, &got); err != nil || !reflect.DeepEqual(got, ev) {
			t.Fatalf("round trip: got %+v, %v; want %+v", got, err, ev)
		}
		// Through vmihailenco's hooks.
		b, err := msgpack.Marshal(&ev)
		if err != nil || string(b) != string(enc) {
			t.Fatalf("msgpack.Marshal: %x, %v", b, err)
		}
		var viaLib Event
		if err := msgpack.Unmarshal(b, &viaLib); err != nil || !reflect.DeepEqual(viaLib, ev) {
			t.Fatalf("msgpack.Unmarshal: %+v, %v", viaLib, err)
		}
	}
	got, err := DecodeMsgpackEvents(nil, all)
	if err != nil || !reflect.DeepEqual(got, evs) {
		t.Fatalf("concatenation: %d events, %v", len(got), err)
	}
	arr, err := msgpack.Marshal(evs) // []Event: an array of events
	if err != nil {
		t.Fatal(err)
	}
	if got, err = DecodeMsgpackEvents(nil, arr); err != nil || !reflect.DeepEqual(got, evs) {
		t.Fatalf("array: %d events, %v", len(got), err)
	}
}

// TestMsgpackFieldNames checks our encoding against vmihailenco's generic
// decoding, and decodes maps vmihailenco encoded (other int widths, other
// key order, unknown keys, missing defaults).
func TestMsgpackFieldNames(t *testing.T) {
	ev := Event{WorkerID: math.MaxUint64, Tier: TierHostPinned, EventID: 5, DPRank: 2, Kind: KindStored,
		HasParent: true, Parent: 1 << 63, Blocks: []Block{{Hash: 3, Local: 4}}}
	var m map[string]any
	if err := msgpack.Unmarshal(AppendMsgpack(nil, &ev), &m); err != nil {
		t.Fatal(err)
	}
	e := m["event"].(map[string]any)
	st := e["data"].(map[string]any)["stored"].(map[string]any)
	blk := st["blocks"].([]any)[0].(map[string]any)
	if m["worker_id"] != uint64(math.MaxUint64) || m["storage_tier"] != "host_pinned" ||
		e["event_id"] != int8(5) || e["dp_rank"] != int8(2) ||
		st["parent_hash"] != uint64(1<<63) || st["start_position"] != nil ||
		blk["block_hash"] != int8(3) || blk["tokens_hash"] != int8(4) {
		t.Fatalf("generic view: %#v", m)
	}

	in := map[string]any{
		"event": map[string]any{
			"data":     map[string]any{"removed": map[string]any{"block_hashes": []uint64{1, math.MaxUint64}}},
			"event_id": uint32(9),
			"extra":    []any{1, "x"},
		},
		"worker_id": int64(7),
	}
	var got Event
	if err := DecodeMsgpack(mp(t, in), &got); err != nil {
		t.Fatal(err)
	}
	want := Event{WorkerID: 7, EventID: 9, Kind: KindRemoved, Hashes: []uint64{1, math.MaxUint64}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v want %+v", got, want)
	}
}

// TestMsgpackGroup: kv_cache_group as a generic decoder sees it, absent for
// the zero group, and its decode errors.
func TestMsgpackGroup(t *testing.T) {
	ev := Event{WorkerID: 1, EventID: 5, Kind: KindRemoved, Group: Group{Index: 300, Kind: GroupSliding, Window: 64},
		Hashes: []uint64{3}}
	var m map[string]any
	if err := msgpack.Unmarshal(AppendMsgpack(nil, &ev), &m); err != nil {
		t.Fatal(err)
	}
	g, _ := m["kv_cache_group"].(map[string]any)
	if len(m) != 4 || len(g) != 3 || g["index"] != uint16(300) || g["kind"] != "sliding_window" || g["sliding_window"] != int8(64) {
		t.Fatalf("generic view: %#v", m)
	}
	ev.Group = Group{}
	m = nil
	if err := msgpack.Unmarshal(AppendMsgpack(nil, &ev), &m); err != nil || len(m) != 3 || m["kv_cache_group"] != nil {
		t.Fatalf("zero group: %#v %v", m, err)
	}
	okEvent := func(g any) []byte {
		return mp(t, map[string]any{"worker_id": 1, "kv_cache_group": g,
			"event": map[string]any{"event_id": 2, "data": map[string]any{"removed": map[string]any{"block_hashes": []any{}}}}})
	}
	var got Event
	if err := DecodeMsgpack(okEvent(map[string]any{"kind": "mamba", "index": int64(4), "x": []any{nil}}), &got); err != nil ||
		got.Group != (Group{Index: 4, Kind: GroupState}) {
		t.Fatalf("lenient: %+v %v", got, err)
	}
	if err := DecodeMsgpack(okEvent(nil), &got); err != nil || !got.Group.IsZero() {
		t.Fatalf("nil group: %+v %v", got, err)
	}
	for name, g := range map[string]any{
		"unknown kind":    map[string]any{"kind": "cross_attention"},
		"missing kind":    map[string]any{"index": 1},
		"window on full":  map[string]any{"kind": "full_attention", "sliding_window": 8},
		"index overflow":  map[string]any{"kind": "mamba", "index": uint64(1 << 32)},
		"kind not string": map[string]any{"kind": 1},
		"not a map":       []any{1},
	} {
		if err := DecodeMsgpack(okEvent(g), &got); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: err %v", name, err)
		}
	}
	cleared := mp(t, map[string]any{"worker_id": 1, "kv_cache_group": map[string]any{"kind": "mamba"},
		"event": map[string]any{"event_id": 2, "data": "cleared"}})
	if err := DecodeMsgpack(cleared, &got); !errors.Is(err, ErrMalformed) {
		t.Errorf("group on cleared: err %v", err)
	}
}

func TestMsgpackDecodeErrors(t *testing.T) {
	okEvent := func() map[string]any {
		return map[string]any{"worker_id": 1, "event": map[string]any{"event_id": 2, "data": "cleared"}}
	}
	var ev Event
	if err := DecodeMsgpack(mp(t, okEvent()), &ev); err != nil {
		t.Fatalf("control: %v", err)
	}
	mut := func(f func(m map[string]any)) []byte {
		m := okEvent()
		f(m)
		return mp(t, m)
	}
	inner := func(m map[string]any) map[string]any { return m["event"].(map[string]any) }
	bad := map[string][]byte{
		"empty":           nil,
		"not a map":       mp(t, []any{1}),
		"trailing":        append(mp(t, okEvent()), 0xc0),
		"truncated":       mp(t, okEvent())[:10],
		"negative worker": mut(func(m map[string]any) { m["worker_id"] = -1 }),
		"float worker":    mut(func(m map[string]any) { m["worker_id"] = 1.0 }),
		"no worker":       mut(func(m map[string]any) { delete(m, "worker_id") }),
		"no event":        mut(func(m map[string]any) { delete(m, "event") }),
		"bad tier":        mut(func(m map[string]any) { m["storage_tier"] = "gpu" }),
		"tier not string": mut(func(m map[string]any) { m["storage_tier"] = 1 }),
		"no event_id":     mut(func(m map[string]any) { delete(inner(m), "event_id") }),
		"no data":         mut(func(m map[string]any) { delete(inner(m), "data") }),
		"rank overflow":   mut(func(m map[string]any) { inner(m)["dp_rank"] = uint64(1 << 32) }),
		"bad variant":     mut(func(m map[string]any) { inner(m)["data"] = "wiped" }),
		"empty data":      mut(func(m map[string]any) { inner(m)["data"] = map[string]any{} }),
		"no blocks":       mut(func(m map[string]any) { inner(m)["data"] = map[string]any{"stored": map[string]any{}} }),
		"blocks not list": mut(func(m map[string]any) { inner(m)["data"] = map[string]any{"stored": map[string]any{"blocks": 1}} }),
		"no hashes":       mut(func(m map[string]any) { inner(m)["data"] = map[string]any{"removed": map[string]any{}} }),
		"non-string key":  mp(t, map[int]int{1: 2}),
		"huge map":        {0xdf, 0x7f, 0xff, 0xff, 0xff},
	}
	for name, in := range bad {
		var ev Event
		if err := DecodeMsgpack(in, &ev); err == nil || !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: err %v", name, err)
		}
	}
}
