package kvevents

import (
	"encoding/hex"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/kvrouter/kvrouter/kvhash"
)

func infoString(i BatchInfo) string {
	s := fmt.Sprintf("ts=%v dp_rank=%d has_dp_rank=%v events=%d skipped=%d failed=%d",
		i.TS, i.DPRank, i.HasDPRank, i.Events, i.Skipped, i.Failed)
	if i.UnknownGroups != 0 {
		s += fmt.Sprintf(" unknown_groups=%d", i.UnknownGroups)
	}
	return s
}

func mp(t testing.TB, v any) []byte {
	t.Helper()
	b, err := msgpack.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func newDec(t testing.TB, bs int) *VLLMDecoder {
	t.Helper()
	d, err := NewVLLMDecoder(VLLMConfig{BlockSize: bs, WorkerID: 9, DPRank: 7})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// Golden local hashes from DESIGN.md §1 (B=4).
const (
	l0   = 9143094415614847814  // tokens 0..3
	l1   = 12124091508212882195 // tokens 4..7
	l2   = 1088361764653601668  // tokens 8..11
	lA   = 6665157333201000639  // tokens 0..3 with lora "adapter-a"
	sha  = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
	sha8 = 0x18191a1b1c1d1e1f // its last 8 bytes, big-endian
	big  = 0xF3A1B2C3D4E5F607
)

func shaBytes() []byte { b, _ := hex.DecodeString(sha); return b }

func toks(from, to uint32) []any {
	var out []any
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

func TestDEPSExamples(t *testing.T) {
	full := mp(t, []any{1732000000.125, []any{
		[]any{"BlockStored", []any{uint64(big), 1234567890123}, nil, []any{101, 102, 103, 104}, 16, nil, "GPU"},
		[]any{"BlockRemoved", []any{shaBytes()}, "GPU"},
		[]any{"AllBlocksCleared"},
	}, 3})
	evs, info, err := newDec(t, 16).DecodeBatch(nil, full)
	want := []Event{
		{WorkerID: 9, DPRank: 3, Kind: KindRemoved, Hashes: []uint64{sha8}},
		{WorkerID: 9, DPRank: 3, Kind: KindCleared},
	}
	if !reflect.DeepEqual(evs, want) {
		t.Fatalf("full: got %v", evs)
	}
	var tc *TokenCountError
	var ee *EventError
	if !errors.As(err, &tc) || *tc != (TokenCountError{Tokens: 4, Blocks: 2, BlockSize: 16}) ||
		!errors.As(err, &ee) || ee.Index != 0 || ee.Tag != "BlockStored" {
		t.Fatalf("full: err %v", err)
	}
	if info.Events != 3 || info.Failed != 1 || !info.HasDPRank || info.TS != 1732000000.125 {
		t.Fatalf("full: info %s", infoString(info))
	}

	// The "short" payload, built in Go, must equal DEPS.md's hex (printed
	// there with the 32 bytes elided) and the python-generated file.
	short := mp(t, []any{1732000001.5, []any{
		[]any{"BlockStored", []any{shaBytes()}, uint64(big), []any{7, 8}, 16, 5, nil},
	}})
	const head = "92cb41d9cf0e406000009197ab426c6f636b53746f72656491c420000102"
	const tail = "1e1fcff3a1b2c3d4e5f6079207081005c0"
	depsHex := head + sha[6:len(sha)-4] + tail
	if got := hex.EncodeToString(short); got != depsHex {
		// vmihailenco may pick other int widths; compare semantically then.
		t.Logf("vmihailenco encoding %s differs from DEPS hex (int widths)", got)
	}
	if py := readHex(t, "testdata/deps_short.hex"); hex.EncodeToString(py) != depsHex {
		t.Fatalf("python payload %x != DEPS hex %s", py, depsHex)
	}
	for _, payload := range [][]byte{short, readHex(t, "testdata/deps_short.hex")} {
		evs, info, err := newDec(t, 16).DecodeBatch(nil, payload)
		if len(evs) != 0 || !errors.As(err, &tc) || *tc != (TokenCountError{Tokens: 2, Blocks: 1, BlockSize: 16}) {
			t.Fatalf("short: %v %v", evs, err)
		}
		if info.HasDPRank || info.DPRank != 7 {
			t.Fatalf("short: dp rank should come from the config: %s", infoString(info))
		}
		// At a different configured size the block size check fires first.
		_, err = newDec(t, 4).Decode(nil, payload)
		var bse *BlockSizeError
		if !errors.As(err, &bse) || *bse != (BlockSizeError{Got: 16, Want: 4}) ||
			!strings.Contains(err.Error(), "16") || !strings.Contains(err.Error(), "4") {
			t.Fatalf("short at B=4: %v", err)
		}
	}
}

func TestVLLMArrayPrefixes(t *testing.T) {
	// Every field count from the 4 required fields up to 14 (beyond the
	// known ones: unknown trailing fields).
	fields := []any{[]any{1, 2}, nil, toks(0, 8), 4, nil, "GPU", nil, nil, 0, "full_attention", nil, "LOCAL", "owner", "session"}
	for n := 0; n <= len(fields); n++ {
		ev := append([]any{"BlockStored"}, fields[:n]...)
		evs, err := newDec(t, 4).Decode(nil, mp(t, []any{1.0, []any{ev}}))
		if n < 4 {
			if err == nil || !errors.Is(err, ErrMalformed) || len(evs) != 0 {
				t.Fatalf("%d fields: want a malformed-event error, got %v %v", n, evs, err)
			}
			continue
		}
		want := []Event{{WorkerID: 9, DPRank: 7, Kind: KindStored, Blocks: []Block{{1, l0}, {2, l1}}}}
		if err != nil || !reflect.DeepEqual(evs, want) {
			t.Fatalf("%d fields: %v %v", n, evs, err)
		}
	}
	for n := 0; n <= 4; n++ {
		rf := []any{[]any{-1}, "cpu", 0, "x"}
		ev := append([]any{"BlockRemoved"}, rf[:n]...)
		evs, err := newDec(t, 4).Decode(nil, mp(t, []any{1.0, []any{ev}}))
		if n == 0 {
			if err == nil {
				t.Fatal("removed without hashes decoded")
			}
			continue
		}
		tier := TierDevice
		if n >= 2 {
			tier = TierHostPinned
		}
		want := []Event{{WorkerID: 9, DPRank: 7, Tier: tier, Kind: KindRemoved, Hashes: []uint64{1<<64 - 1}}}
		if err != nil || !reflect.DeepEqual(evs, want) {
			t.Fatalf("removed %d fields: %v %v", n, evs, err)
		}
	}
}

func TestVLLMHashForms(t *testing.T) {
	cases := []struct {
		in   any
		want uint64
	}{
		{0, 0},
		{int64(-1), 1<<64 - 1},
		{int64(-2), 1<<64 - 2},
		{uint64(1 << 63), 1 << 63},
		{uint64(big), big},
		{int8(5), 5},
		{[]byte{}, 0},
		{[]byte{1, 2}, 0x0102},
		{shaBytes(), sha8},
	}
	for _, c := range cases {
		p := mp(t, []any{1.0, []any{[]any{"BlockRemoved", []any{c.in}}}})
		evs, err := newDec(t, 4).Decode(nil, p)
		if err != nil || len(evs) != 1 || evs[0].Hashes[0] != c.want {
			t.Fatalf("hash %v: %v %v", c.in, evs, err)
		}
	}
	for _, bad := range []any{"str", 1.5, true, []any{1}} {
		p := mp(t, []any{1.0, []any{[]any{"BlockRemoved", []any{bad}}}})
		if _, err := newDec(t, 4).Decode(nil, p); !errors.Is(err, ErrMalformed) {
			t.Fatalf("hash %v: err %v", bad, err)
		}
	}
}

func TestVLLMLocalHashes(t *testing.T) {
	mmID := strings.Repeat("ab", 32) // a 64-hex-digit vLLM mm identifier
	p := mp(t, []any{1.0, []any{
		[]any{"BlockStored", []any{1}, nil, toks(0, 4), 4, nil, nil, "adapter-a"},
		// extra_keys: block 0 plain keys only, block 1 an mm identifier with offset.
		[]any{"BlockStored", []any{2, 3}, 1, toks(0, 8), 4, nil, nil, nil,
			[]any{[]any{"adapter-b", "salt"}, []any{[]any{mmID, 3}, mmID}}},
	}})
	evs, err := newDec(t, 4).Decode(nil, p)
	if err != nil || len(evs) != 2 {
		t.Fatal(evs, err)
	}
	if evs[0].Blocks[0].Local != lA || kvhash.Local([]uint32{0, 1, 2, 3}, kvhash.Seed("adapter-a", "")) != lA {
		t.Fatalf("lora local %d", evs[0].Blocks[0].Local)
	}
	mm := uint64(0xabababababababab)
	wantMM := kvhash.LocalMM([]uint32{4, 5, 6, 7}, []uint64{mm, mm}, kvhash.DefaultSeed)
	if evs[1].Blocks[0].Local != l0 || evs[1].Blocks[1].Local != wantMM || !evs[1].HasParent || evs[1].Parent != 1 {
		t.Fatalf("mm locals %v", evs[1])
	}
}

func TestVLLMEagle(t *testing.T) {
	pairs := func(from, to uint32) []any {
		var out []any
		for i := from; i < to; i++ {
			out = append(out, []any{i, i + 1})
		}
		return out
	}
	evs, err := newDec(t, 4).Decode(nil, mp(t, []any{1.0, []any{[]any{"BlockStored", []any{1, 2}, nil, pairs(0, 8), 4, nil, nil}}}))
	if err != nil || !reflect.DeepEqual(evs[0].Blocks, []Block{{1, l0}, {2, l1}}) {
		t.Fatal(evs, err)
	}
	mixed := append(pairs(0, 3), 3)
	if _, err := newDec(t, 4).Decode(nil, mp(t, []any{1.0, []any{[]any{"BlockStored", []any{1}, nil, mixed, 4, nil, nil}}})); !errors.Is(err, ErrMalformed) {
		t.Fatalf("mixed pairs: %v", err)
	}
}

func TestVLLMGroups(t *testing.T) {
	store := func(h, group int, kind any, window any) any {
		m := map[string]any{"type": "BlockStored", "block_hashes": []any{h}, "parent_block_hash": nil,
			"token_ids": toks(0, 4), "block_size": 4, "lora_id": nil, "medium": nil, "lora_name": nil,
			"group_idx": group, "kv_cache_spec_kind": kind}
		if window != nil {
			m["kv_cache_spec_sliding_window"] = window
		}
		return m
	}
	remove := func(h, group int) any {
		return map[string]any{"type": "BlockRemoved", "block_hashes": []any{h}, "medium": nil, "group_idx": group}
	}
	groups := func(evs []Event) (out []string) {
		for _, e := range evs {
			h := e.Hashes
			for _, b := range e.Blocks {
				h = append(h, b.Hash)
			}
			out = append(out, fmt.Sprintf("%v@%s", h, e.Group))
		}
		return out
	}
	d := newDec(t, 4)
	// Before learning anything: group 0 is full attention, other groups
	// are unknown.
	evs, info, err := d.DecodeBatch(nil, mp(t, map[string]any{"ts": 1.0, "events": []any{remove(10, 0), remove(11, 1)}}))
	if got, want := groups(evs), []string{"[10]@g0:full_attention"}; err != nil || !reflect.DeepEqual(got, want) ||
		info.Skipped != 1 || info.UnknownGroups != 1 {
		t.Fatalf("unlearnt: %v %v %s", got, err, infoString(info))
	}
	// A model whose group 0 is sliding window and group 1 full attention.
	evs, info, err = d.DecodeBatch(nil, mp(t, map[string]any{"ts": 1.0, "events": []any{
		store(20, 0, "sliding_window", 128), store(21, 1, "full_attention", nil), store(22, 2, "mamba", nil),
		store(23, 3, "mla_attention", 7), store(24, 4, "sink_full_attention", nil), store(25, 5, "chunked_local_attention", 64),
		store(26, 6, "sliding_window_mla", nil), store(27, 70, "mamba", nil), store(28, 7, "sliding_window", "x"),
		remove(30, 0), remove(31, 1), remove(32, 2), remove(33, 3), remove(34, 4), remove(35, 5), remove(36, 6),
		remove(37, 70), remove(38, 99),
	}}))
	want := []string{
		"[20]@g0:sliding_window/128", "[21]@g1:full_attention", "[22]@g2:mamba", "[23]@g3:full_attention",
		"[24]@g4:full_attention", "[26]@g6:sliding_window", "[27]@g70:mamba", "[28]@g7:sliding_window",
		"[30]@g0:sliding_window/128", "[31]@g1:full_attention", "[32]@g2:mamba", "[33]@g3:full_attention",
		"[34]@g4:full_attention", "[36]@g6:sliding_window",
	}
	if got := groups(evs); err != nil || !reflect.DeepEqual(got, want) || info.UnknownGroups != 4 || info.Skipped != 4 {
		t.Fatalf("learnt:\n got %v\nwant %v\n%v %s", got, want, err, infoString(info))
	}
	// A later store without the window keeps the learnt one; a group whose
	// kind turns unknown drops its removes; a kind taught later is used.
	evs, info, err = d.DecodeBatch(nil, mp(t, map[string]any{"ts": 1.0, "events": []any{
		store(40, 0, "sliding_window", nil), remove(41, 0), store(42, 1, "cross_attention", nil), remove(43, 1),
		store(44, 9, "mamba", nil), remove(45, 9),
	}}))
	want = []string{"[40]@g0:sliding_window/128", "[41]@g0:sliding_window/128", "[44]@g9:mamba", "[45]@g9:mamba"}
	if got := groups(evs); err != nil || !reflect.DeepEqual(got, want) || info.UnknownGroups != 2 {
		t.Fatalf("relearnt: %v %v %s", got, err, infoString(info))
	}
	for i := range evs {
		if err := evs[i].Validate(); err != nil {
			t.Fatalf("%s: %v", evs[i], err)
		}
	}
}

// TestVLLMGroupsArrayForm: the array form's group slots (group_idx,
// kv_cache_spec_kind, kv_cache_spec_sliding_window after extra_keys) and
// newer trailing fields after them.
func TestVLLMGroupsArrayForm(t *testing.T) {
	evs, info, err := newDec(t, 4).DecodeBatch(nil, mp(t, []any{1.0, []any{
		[]any{"BlockStored", []any{1}, nil, toks(0, 4), 4, nil, "GPU", nil, nil, 1, "sliding_window", 32, "locality", nil},
		[]any{"BlockStored", []any{2}, nil, toks(0, 4), 4, nil, "GPU", nil, nil, 2, "mamba", nil},
		[]any{"BlockStored", []any{3}, nil, toks(0, 4), 4, nil, "GPU", nil, nil, 3, "encoder_only_attention"},
		[]any{"BlockRemoved", []any{1}, "GPU", 1, "future"},
		[]any{"BlockRemoved", []any{2}, nil, 2},
		[]any{"BlockRemoved", []any{3}, nil, 3},
	}}))
	want := []Event{
		{WorkerID: 9, DPRank: 7, Kind: KindStored, Group: Group{1, GroupSliding, 32}, Blocks: []Block{{1, l0}}},
		{WorkerID: 9, DPRank: 7, Kind: KindStored, Group: Group{2, GroupState, 0}, Blocks: []Block{{2, l0}}},
		{WorkerID: 9, DPRank: 7, Kind: KindRemoved, Group: Group{1, GroupSliding, 32}, Hashes: []uint64{1}},
		{WorkerID: 9, DPRank: 7, Kind: KindRemoved, Group: Group{2, GroupState, 0}, Hashes: []uint64{2}},
	}
	if err != nil || !reflect.DeepEqual(evs, want) || info.UnknownGroups != 2 || info.Skipped != 2 {
		t.Fatalf("got %v %v %s", evs, err, infoString(info))
	}
}

func TestVLLMMapAndBatchForms(t *testing.T) {
	ev := map[string]any{"type": "BlockStored", "block_hashes": []any{1}, "token_ids": toks(4, 8), "block_size": 4, "unknown": []any{1, map[string]any{"a": nil}}}
	for name, batch := range map[string]any{
		"map batch, dp_rank alias": map[string]any{"ts": 5, "events": []any{ev}, "dp_rank": 2, "other": "x"},
		"array batch, extra field": []any{5.0, []any{ev}, 2, "future"},
		"float32 ts":               []any{float32(5), []any{ev}, 2},
	} {
		evs, info, err := newDec(t, 4).DecodeBatch(nil, mp(t, batch))
		want := []Event{{WorkerID: 9, DPRank: 2, Kind: KindStored, Blocks: []Block{{1, l1}}}}
		if err != nil || !reflect.DeepEqual(evs, want) || info.TS != 5 {
			t.Fatalf("%s: %v %v %s", name, evs, err, infoString(info))
		}
	}
}

func TestVLLMMalformedBatch(t *testing.T) {
	good := []any{"AllBlocksCleared"}
	bad := map[string][]byte{
		"empty":            nil,
		"not a batch":      mp(t, "hello"),
		"short array":      mp(t, []any{1.0}),
		"ts not a number":  mp(t, []any{"x", []any{good}}),
		"events not list":  mp(t, []any{1.0, "x"}),
		"negative rank":    mp(t, []any{1.0, []any{good}, -1}),
		"rank overflow":    mp(t, []any{1.0, []any{good}, uint64(1 << 40)}),
		"map no events":    mp(t, map[string]any{"ts": 1.0}),
		"trailing bytes":   append(mp(t, []any{1.0, []any{good}}), 0xc0),
		"truncated":        mp(t, []any{1.0, []any{good, good}})[:8],
		"event not a list": mp(t, []any{1.0, []any{5}}),
		"empty event":      mp(t, []any{1.0, []any{[]any{}}}),
		"tag not a string": mp(t, []any{1.0, []any{[]any{1}}}),
		"huge array len":   {0x92, 0x01, 0xdd, 0xff, 0xff, 0xff, 0xff},
		"invalid byte":     {0x92, 0x01, 0x91, 0xc1},
	}
	for name, in := range bad {
		evs, err := newDec(t, 4).Decode([]Event{{WorkerID: 1}}, in)
		if err == nil || !errors.Is(err, ErrMalformed) || len(evs) != 1 {
			t.Errorf("%s: got %v, %v", name, evs, err)
		}
	}
	// Per-event problems leave the rest of the batch alone.
	perEvent := map[string]any{
		"no type":         map[string]any{"block_hashes": []any{1}},
		"missing tokens":  map[string]any{"type": "BlockStored", "block_hashes": []any{1}, "block_size": 4},
		"token too big":   []any{"BlockStored", []any{1}, nil, []any{0, 1, 2, uint64(1 << 32)}, 4},
		"negative token":  []any{"BlockStored", []any{1}, nil, []any{0, 1, 2, -3}, 4},
		"medium not str":  []any{"BlockRemoved", []any{1}, 5},
		"lora not str":    []any{"BlockStored", []any{1}, nil, toks(0, 4), 4, nil, nil, 5},
		"hashes not list": []any{"BlockRemoved", 1},
		"bad parent":      []any{"BlockStored", []any{1}, "p", toks(0, 4), 4},
		"bad block size":  []any{"BlockStored", []any{1}, nil, toks(0, 4), "4"},
	}
	for name, ev := range perEvent {
		evs, info, err := newDec(t, 4).DecodeBatch(nil, mp(t, []any{1.0, []any{ev, good}}))
		var ee *EventError
		if !errors.As(err, &ee) || ee.Index != 0 || len(evs) != 1 || evs[0].Kind != KindCleared || info.Failed != 1 {
			t.Errorf("%s: got %v, %v", name, evs, err)
		}
	}
}

func TestMediumTier(t *testing.T) {
	cases := map[string]Tier{
		"": TierDevice, "GPU": TierDevice, "gpu": TierDevice, "Device": TierDevice,
		"CPU": TierHostPinned, "cpu": TierHostPinned, "CPU_PINNED": TierHostPinned, "cpu_tier1": TierHostPinned,
		"CPU_TIER2": TierDisk, "DISK": TierDisk, "disk_cache": TierDisk, "NVMe": TierDisk, "STORAGE": TierDisk,
		"EXTERNAL": TierExternal, "remote": TierExternal, "SHARED": TierExternal, "network": TierExternal,
		"TPU": TierDevice, strings.Repeat("x", 100): TierDevice,
	}
	for in, want := range cases {
		if got := MediumTier(in); got != want {
			t.Errorf("MediumTier(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestNewVLLMDecoderRejectsBadBlockSize(t *testing.T) {
	for _, bs := range []int{0, -4} {
		if _, err := NewVLLMDecoder(VLLMConfig{BlockSize: bs}); err == nil {
			t.Fatalf("block size %d accepted", bs)
		}
	}
}

func TestVLLMLargeBlocks(t *testing.T) {
	// Block size above the stack buffer takes the heap path.
	const bs = 300
	var tk []uint32
	for i := uint32(0); i < 2*bs; i++ {
		tk = append(tk, i*7)
	}
	anyTok := make([]any, len(tk))
	for i, v := range tk {
		anyTok[i] = v
	}
	evs, err := newDec(t, bs).Decode(nil, mp(t, []any{1.0, []any{[]any{"BlockStored", []any{1, 2}, nil, anyTok, bs, nil, nil}}}))
	want := kvhash.LocalHashes(tk, bs, kvhash.DefaultSeed)
	if err != nil || evs[0].Blocks[0].Local != want[0] || evs[0].Blocks[1].Local != want[1] {
		t.Fatal(evs, err)
	}
}
