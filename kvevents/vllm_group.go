package kvevents

import (
	"errors"
	"math"
	"sync/atomic"
)

// KV cache groups in vLLM payloads (see VLLMDecoder, "KV cache groups").

// VLLMDecoder.learnt layout.
const (
	maxLearnt     = 64
	learntSet     = 1 << 63
	learntUnknown = 1 << 62
)

// errUnknownGroup drops an event of an unknown kv cache group (counted in
// BatchInfo.UnknownGroups, not an error).
var errUnknownGroup = errors.New("kvevents: unknown kv cache group")

// specKind maps a kv_cache_spec_kind to a group kind; ok is false for the
// kinds the router does not model (vllm/v1/kv_cache_interface.py
// KVCacheSpecKind: chunked_local_attention, encoder_only_attention,
// cross_attention, unknown, and anything newer).
func specKind(kind []byte) (k GroupKind, ok bool) {
	switch string(kind) {
	case "full_attention", "mla_attention", "sink_full_attention":
		return GroupFull, true
	case "sliding_window", "sliding_window_mla":
		return GroupSliding, true
	case "mamba":
		return GroupState, true
	}
	return 0, false
}

// optUint32 reads an optional unsigned metadata field. A value of an
// unexpected type (schema drift) reads as absent, not as an error.
func optUint32(raw []byte) (uint32, bool) {
	if raw == nil {
		return 0, false
	}
	r := mpReader{b: raw}
	if v, k, err := r.integer(); err == nil && k == unsigned && v <= math.MaxUint32 {
		return uint32(v), true
	}
	return 0, false
}

// group resolves an event's kv cache group, learning from stores that name
// their kind; errUnknownGroup when the event must be dropped.
func (d *VLLMDecoder) group(e *rawEvent) (Group, error) {
	idx, haveIdx := optUint32(e.group)
	var kind []byte
	if e.kind != nil {
		r := mpReader{b: e.kind}
		if s, ok, err := r.str(); err == nil && ok {
			kind = s
		}
	}
	var slot *atomic.Uint64
	if haveIdx && idx < maxLearnt {
		slot = &d.learnt[idx]
	}
	if kind == nil {
		if !haveIdx {
			return Group{}, nil // no group fields: a model without groups
		}
		var v uint64
		if slot != nil {
			v = slot.Load()
		}
		switch {
		case v == 0 && idx == 0:
			return Group{}, nil
		case v == 0 || v&learntUnknown != 0:
			return Group{}, errUnknownGroup
		}
		return Group{Index: idx, Kind: GroupKind(v >> 32 & 0xff), Window: uint32(v)}, nil
	}
	k, ok := specKind(kind)
	if !ok {
		if slot != nil {
			slot.Store(learntSet | learntUnknown)
		}
		return Group{}, errUnknownGroup
	}
	g := Group{Index: idx, Kind: k}
	if k == GroupSliding {
		g.Window, _ = optUint32(e.window)
	}
	if slot != nil {
		// NB: a sliding store without its window keeps the one its group's
		// earlier stores gave.
		if old := slot.Load(); g.Window == 0 && old&learntUnknown == 0 && GroupKind(old>>32&0xff) == k {
			g.Window = uint32(old)
		}
		if v := learntSet | uint64(k)<<32 | uint64(g.Window); slot.Load() != v {
			slot.Store(v)
		}
	}
	return g, nil
}
