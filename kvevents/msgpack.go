package kvevents

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/vmihailenco/msgpack/v5"
)

// msgpack codec: the JSON shape of json.go written as msgpack maps with the
// same field names (the "named" form, rmp_serde::to_vec_named in Dynamo's
// terms):
//
//	{"worker_id":u64, "storage_tier":str, "event":{"event_id":u64,
//	 "data":{"stored":{"parent_hash":u64|nil,"start_position":u32|nil,
//	 "blocks":[{"block_hash":u64,"tokens_hash":u64}]}} | {"removed":{"block_hashes":[u64]}} | "cleared",
//	 "dp_rank":u32}}
//
// plus, as in JSON, "kv_cache_group":{"index":u32,"kind":str,
// "sliding_window":u32} after storage_tier for a non-zero Event.Group
// (sliding_window only when not 0; the whole key omitted for the zero
// group, so such events encode exactly as before).
//
// Integers are written in their most compact msgpack form and read from any
// integer form (negative values are errors). Defaults, required fields and
// unknown keys are handled as for JSON. Dynamo's positional msgpack
// (rmp_serde::to_vec, structs as arrays) is not accepted.
//
// *Event implements msgpack.CustomEncoder and msgpack.CustomDecoder, so
// vmihailenco/msgpack users can Marshal/Unmarshal events directly; both go
// through the allocation-light AppendMsgpack/DecodeMsgpack below.

var (
	_ msgpack.CustomEncoder = (*Event)(nil)
	_ msgpack.CustomDecoder = (*Event)(nil)
)

// AppendMsgpack appends the msgpack encoding of ev to dst. Like AppendJSON
// it is canonical and expects a valid event.
func AppendMsgpack(dst []byte, ev *Event) []byte {
	if ev.Group.IsZero() {
		dst = append(dst, 0x83)
	} else {
		dst = append(dst, 0x84)
	}
	dst = mpStr(dst, "worker_id")
	dst = mpUint(dst, ev.WorkerID)
	dst = mpStr(dst, "storage_tier")
	dst = mpStr(dst, ev.Tier.String())
	if g := ev.Group; !g.IsZero() {
		dst = mpStr(dst, "kv_cache_group")
		if g.Window != 0 {
			dst = append(dst, 0x83)
		} else {
			dst = append(dst, 0x82)
		}
		dst = mpStr(dst, "index")
		dst = mpUint(dst, uint64(g.Index))
		dst = mpStr(dst, "kind")
		dst = mpStr(dst, g.Kind.String())
		if g.Window != 0 {
			dst = mpStr(dst, "sliding_window")
			dst = mpUint(dst, uint64(g.Window))
		}
	}
	dst = mpStr(dst, "event")
	dst = append(dst, 0x83)
	dst = mpStr(dst, "event_id")
	dst = mpUint(dst, ev.EventID)
	dst = mpStr(dst, "data")
	switch ev.Kind {
	case KindStored:
		dst = append(dst, 0x81)
		dst = mpStr(dst, "stored")
		dst = append(dst, 0x83)
		dst = mpStr(dst, "parent_hash")
		if ev.HasParent {
			dst = mpUint(dst, ev.Parent)
		} else {
			dst = append(dst, 0xc0)
		}
		dst = mpStr(dst, "start_position")
		if ev.HasStart {
			dst = mpUint(dst, uint64(ev.StartPosition))
		} else {
			dst = append(dst, 0xc0)
		}
		dst = mpStr(dst, "blocks")
		dst = mpArray(dst, len(ev.Blocks))
		for i := range ev.Blocks {
			dst = append(dst, 0x82)
			dst = mpStr(dst, "block_hash")
			dst = mpUint(dst, ev.Blocks[i].Hash)
			dst = mpStr(dst, "tokens_hash")
			dst = mpUint(dst, ev.Blocks[i].Local)
		}
	case KindRemoved:
		dst = append(dst, 0x81)
		dst = mpStr(dst, "removed")
		dst = append(dst, 0x81)
		dst = mpStr(dst, "block_hashes")
		dst = mpArray(dst, len(ev.Hashes))
		for _, h := range ev.Hashes {
			dst = mpUint(dst, h)
		}
	case KindCleared:
		dst = mpStr(dst, "cleared")
	default:
		dst = append(dst, 0xc0)
	}
	dst = mpStr(dst, "dp_rank")
	dst = mpUint(dst, uint64(ev.DPRank))
	return dst
}

func mpStr(dst []byte, s string) []byte {
	switch n := len(s); {
	case n < 32:
		dst = append(dst, 0xa0|byte(n))
	case n < 256:
		dst = append(dst, 0xd9, byte(n))
	case n < 1<<16:
		dst = append(dst, 0xda, byte(n>>8), byte(n))
	default:
		dst = binary.BigEndian.AppendUint32(append(dst, 0xdb), uint32(n))
	}
	return append(dst, s...)
}

func mpArray(dst []byte, n int) []byte {
	switch {
	case n < 16:
		return append(dst, 0x90|byte(n))
	case n < 1<<16:
		return append(dst, 0xdc, byte(n>>8), byte(n))
	}
	return binary.BigEndian.AppendUint32(append(dst, 0xdd), uint32(n))
}

func mpUint(dst []byte, v uint64) []byte {
	switch {
	case v < 128:
		return append(dst, byte(v))
	case v < 1<<8:
		return append(dst, 0xcc, byte(v))
	case v < 1<<16:
		return append(dst, 0xcd, byte(v>>8), byte(v))
	case v < 1<<32:
		return binary.BigEndian.AppendUint32(append(dst, 0xce), uint32(v))
	}
	return binary.BigEndian.AppendUint64(append(dst, 0xcf), v)
}

// EncodeMsgpack implements msgpack.CustomEncoder.
func (e *Event) EncodeMsgpack(enc *msgpack.Encoder) error {
	if err := e.Validate(); err != nil {
		return err
	}
	return enc.Encode(msgpack.RawMessage(AppendMsgpack(nil, e)))
}

// DecodeMsgpack implements msgpack.CustomDecoder.
func (e *Event) DecodeMsgpack(dec *msgpack.Decoder) error {
	raw, err := dec.DecodeRaw()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return DecodeMsgpack(raw, e)
}

// DecodeMsgpack decodes exactly one msgpack RouterEvent into ev, overwriting
// it. Trailing bytes are an error.
func DecodeMsgpack(data []byte, ev *Event) error {
	r := mpReader{b: data}
	if err := r.event(ev); err != nil {
		return err
	}
	if !r.eof() {
		return r.errf("unexpected data after the event")
	}
	return nil
}

// DecodeMsgpackEvents decodes consecutive msgpack RouterEvents (a plain
// concatenation, or one array of events) and appends them to dst. On error
// it returns the events decoded before the bad one.
func DecodeMsgpackEvents(dst []Event, data []byte) ([]Event, error) {
	r := mpReader{b: data}
	if n, ok, err := r.arrayLen(); err != nil {
		return dst, err
	} else if ok {
		for i := 0; i < n; i++ {
			var ev Event
			if err := r.event(&ev); err != nil {
				return dst, &EventError{Index: i, Err: err}
			}
			dst = append(dst, ev)
		}
		if !r.eof() {
			return dst, r.errf("unexpected data after the event array")
		}
		return dst, nil
	}
	for i := 0; !r.eof(); i++ {
		var ev Event
		if err := r.event(&ev); err != nil {
			return dst, &EventError{Index: i, Err: err}
		}
		dst = append(dst, ev)
	}
	return dst, nil
}

// fields iterates over a map's entries, calling fn with each string key; fn
// must consume the value.
func (r *mpReader) fields(what string, fn func(key []byte) error) error {
	n, ok, err := r.mapLen()
	if err != nil {
		return err
	}
	if !ok {
		return r.errf("%s: want a map, got %s", what, r.kindName())
	}
	for i := 0; i < n; i++ {
		key, ok, err := r.str()
		if err != nil {
			return err
		}
		if !ok {
			return r.errf("%s: want a string key, got %s", what, r.kindName())
		}
		if err := fn(key); err != nil {
			return err
		}
	}
	return nil
}

func (r *mpReader) event(ev *Event) error {
	*ev = Event{}
	var haveWorker, haveEvent bool
	err := r.fields("event", func(key []byte) error {
		var err error
		switch string(key) {
		case "worker_id":
			ev.WorkerID, err = r.uint("worker_id", math.MaxUint64)
			haveWorker = true
		case "storage_tier":
			if r.isNil() {
				return nil
			}
			name, ok, err := r.str()
			if err != nil {
				return err
			}
			if !ok {
				return r.errf("storage_tier: want a string, got %s", r.kindName())
			}
			t, err := ParseTier(string(name))
			if err != nil {
				return fmt.Errorf("%w: %w", ErrMalformed, err)
			}
			ev.Tier = t
		case "event":
			haveEvent = true
			err = r.kvEvent(ev)
		case "kv_cache_group":
			err = r.group(&ev.Group)
		default:
			err = r.skip()
		}
		return err
	})
	if err != nil {
		return err
	}
	if !haveWorker {
		return r.errf("missing worker_id")
	}
	if !haveEvent {
		return r.errf("missing event")
	}
	return checkGroup(ev)
}

// group decodes a kv_cache_group map (nil: the zero group).
func (r *mpReader) group(g *Group) error {
	*g = Group{}
	if r.isNil() {
		return nil
	}
	var haveKind bool
	err := r.fields("kv_cache_group", func(key []byte) error {
		switch string(key) {
		case "index":
			v, err := r.uint("kv_cache_group.index", math.MaxUint32)
			g.Index = uint32(v)
			return err
		case "kind":
			name, ok, err := r.str()
			if err != nil {
				return err
			}
			if !ok {
				return r.errf("kv_cache_group.kind: want a string, got %s", r.kindName())
			}
			if g.Kind, err = ParseGroupKind(string(name)); err != nil {
				return fmt.Errorf("%w: %w", ErrMalformed, err)
			}
			haveKind = true
			return nil
		case "sliding_window":
			v, err := r.uint("kv_cache_group.sliding_window", math.MaxUint32)
			g.Window = uint32(v)
			return err
		}
		return r.skip()
	})
	if err == nil && !haveKind {
		err = r.errf("kv_cache_group: missing kind")
	}
	return err
}

// checkGroup rejects a decoded group that Event.Validate would: a window
// on a group that is not sliding, or a group on a Cleared event.
func checkGroup(ev *Event) error {
	if ev.Group.IsZero() {
		return nil
	}
	if err := ev.Group.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if ev.Kind == KindCleared {
		return fmt.Errorf("%w: kvevents: cleared event carries a kv cache group", ErrMalformed)
	}
	return nil
}

func (r *mpReader) kvEvent(ev *Event) error {
	var haveID, haveData bool
	err := r.fields("event.event", func(key []byte) error {
		var err error
		switch string(key) {
		case "event_id":
			ev.EventID, err = r.uint("event_id", math.MaxUint64)
			haveID = true
		case "dp_rank":
			var v uint64
			v, err = r.uint("dp_rank", math.MaxUint32)
			ev.DPRank = uint32(v)
		case "data":
			haveData = true
			err = r.data(ev)
		default:
			err = r.skip()
		}
		return err
	})
	if err != nil {
		return err
	}
	if !haveID {
		return r.errf("missing event.event_id")
	}
	if !haveData {
		return r.errf("missing event.data")
	}
	return nil
}

func (r *mpReader) data(ev *Event) error {
	if s, ok, err := r.str(); err != nil {
		return err
	} else if ok {
		if string(s) != "cleared" {
			return r.errf("data: unknown variant %q: %v", s, errDataVariant)
		}
		ev.Kind = KindCleared
		return nil
	}
	n := 0
	err := r.fields("data", func(key []byte) error {
		n++
		if n > 1 {
			return r.errf("data: more than one variant")
		}
		switch string(key) {
		case "stored":
			ev.Kind = KindStored
			return r.stored(ev)
		case "removed":
			ev.Kind = KindRemoved
			return r.removed(ev)
		case "cleared":
			if !r.isNil() {
				return r.errf("data.cleared: want nil")
			}
			ev.Kind = KindCleared
			return nil
		}
		return r.errf("data: unknown variant %q: %v", key, errDataVariant)
	})
	if err != nil {
		return err
	}
	if n == 0 {
		return r.errf("data: %v", errDataVariant)
	}
	return nil
}

func (r *mpReader) stored(ev *Event) error {
	var haveBlocks bool
	err := r.fields("stored", func(key []byte) error {
		switch string(key) {
		case "parent_hash":
			if r.isNil() {
				ev.HasParent, ev.Parent = false, 0
				return nil
			}
			v, err := r.uint("parent_hash", math.MaxUint64)
			ev.HasParent, ev.Parent = true, v
			return err
		case "start_position":
			if r.isNil() {
				ev.HasStart, ev.StartPosition = false, 0
				return nil
			}
			v, err := r.uint("start_position", math.MaxUint32)
			ev.HasStart, ev.StartPosition = true, uint32(v)
			return err
		case "blocks":
			haveBlocks = true
			n, ok, err := r.arrayLen()
			if err != nil {
				return err
			}
			if !ok {
				return r.errf("blocks: want an array, got %s", r.kindName())
			}
			ev.Blocks = make([]Block, n)
			for i := range ev.Blocks {
				if ev.Blocks[i], err = r.block(); err != nil {
					return err
				}
			}
			return nil
		}
		return r.skip()
	})
	if err != nil {
		return err
	}
	if !haveBlocks {
		return r.errf("missing stored.blocks")
	}
	return nil
}

func (r *mpReader) block() (Block, error) {
	var b Block
	var haveHash, haveLocal bool
	err := r.fields("block", func(key []byte) error {
		var err error
		switch string(key) {
		case "block_hash":
			b.Hash, err = r.uint("block_hash", math.MaxUint64)
			haveHash = true
		case "tokens_hash":
			b.Local, err = r.uint("tokens_hash", math.MaxUint64)
			haveLocal = true
		default:
			err = r.skip()
		}
		return err
	})
	if err != nil {
		return b, err
	}
	if !haveHash || !haveLocal {
		return b, r.errf("block needs block_hash and tokens_hash")
	}
	return b, nil
}

func (r *mpReader) removed(ev *Event) error {
	var have bool
	err := r.fields("removed", func(key []byte) error {
		if string(key) != "block_hashes" {
			return r.skip()
		}
		have = true
		n, ok, err := r.arrayLen()
		if err != nil {
			return err
		}
		if !ok {
			return r.errf("block_hashes: want an array, got %s", r.kindName())
		}
		ev.Hashes = make([]uint64, n)
		for i := range ev.Hashes {
			if ev.Hashes[i], err = r.uint("block_hashes", math.MaxUint64); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if !have {
		return r.errf("missing removed.block_hashes")
	}
	return nil
}
