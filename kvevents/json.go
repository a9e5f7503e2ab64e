package kvevents

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
)

// JSON codec for the RouterEvent of DESIGN.md §2, field for field Dynamo's
// serde shape (lib/kv-router/src/protocols.rs: RouterEvent, KvCacheEvent,
// KvCacheEventData, KvCacheStoreData, KvCacheStoredBlockData,
// KvCacheRemoveData):
//
//	{"worker_id":1,"storage_tier":"device","event":{"event_id":7,
//	 "data":{"stored":{"parent_hash":null,"start_position":null,
//	 "blocks":[{"block_hash":1,"tokens_hash":2}]}},"dp_rank":0}}
//
// An event of a hybrid model's KV cache group other than full-attention
// group 0 (Event.Group, DESIGN.md §13) carries it after storage_tier,
// omitted for the zero group, so every other event is byte for byte what it
// was:
//
//	"kv_cache_group":{"index":1,"kind":"sliding_window","sliding_window":128}
//
// kind is "full_attention", "sliding_window" or "mamba"; sliding_window (the
// window in tokens) only on sliding groups, omitted when 0. A decoder that
// does not know the key skips it (serde ignores unknown fields), and so
// treats the event as full attention: mix such routers only with models
// without groups.
//
// data is {"stored":{...}}, {"removed":{"block_hashes":[...]}} or the string
// "cleared" (serde's externally tagged enum; {"cleared":null} is accepted
// too). All hashes are JSON numbers holding the full uint64: they are parsed
// as integers and never pass through float64.
//
// Decoding follows serde's defaults: a missing storage_tier is "device", a
// missing dp_rank is 0, a missing parent_hash or start_position is null.
// worker_id, event, event_id, data, blocks, block_hash, tokens_hash and
// block_hashes are required. Unknown keys (Dynamo's residency_domain,
// state_source, mm_extra_info, ...) are skipped. Anything else (wrong types,
// negative or fractional numbers, values out of range, trailing bytes) is an
// error wrapping ErrMalformed.
//
// The decoder is a hand-written scanner (no reflection, no allocation apart
// from the event's own slices); see BenchmarkJSON for its speed.

// AppendJSON appends the JSON encoding of ev to dst and returns the extended
// slice. The output is canonical (fixed key order, no spaces), so encoding a
// decoded event reproduces it byte for byte. ev should satisfy Validate; an
// invalid Kind encodes as "data":null and an invalid Tier as its String form,
// both of which decoders reject.
func AppendJSON(dst []byte, ev *Event) []byte {
	dst = append(dst, `{"worker_id":`...)
	dst = strconv.AppendUint(dst, ev.WorkerID, 10)
	dst = append(dst, `,"storage_tier":"`...)
	dst = append(dst, ev.Tier.String()...)
	dst = append(dst, '"')
	if !ev.Group.IsZero() {
		dst = append(dst, `,"kv_cache_group":{"index":`...)
		dst = strconv.AppendUint(dst, uint64(ev.Group.Index), 10)
		dst = append(dst, `,"kind":"`...)
		dst = append(dst, ev.Group.Kind.String()...)
		dst = append(dst, '"')
		if ev.Group.Window != 0 {
			dst = append(dst, `,"sliding_window":`...)
			dst = strconv.AppendUint(dst, uint64(ev.Group.Window), 10)
		}
		dst = append(dst, '}')
	}
	dst = append(dst, `,"event":{"event_id":`...)
	dst = strconv.AppendUint(dst, ev.EventID, 10)
	dst = append(dst, `,"data":`...)
	switch ev.Kind {
	case KindStored:
		dst = append(dst, `{"stored":{"parent_hash":`...)
		if ev.HasParent {
			dst = strconv.AppendUint(dst, ev.Parent, 10)
		} else {
			dst = append(dst, "null"...)
		}
		dst = append(dst, `,"start_position":`...)
		if ev.HasStart {
			dst = strconv.AppendUint(dst, uint64(ev.StartPosition), 10)
		} else {
			dst = append(dst, "null"...)
		}
		dst = append(dst, `,"blocks":[`...)
		for i := range ev.Blocks {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"block_hash":`...)
			dst = strconv.AppendUint(dst, ev.Blocks[i].Hash, 10)
			dst = append(dst, `,"tokens_hash":`...)
			dst = strconv.AppendUint(dst, ev.Blocks[i].Local, 10)
			dst = append(dst, '}')
		}
		dst = append(dst, "]}}"...)
	case KindRemoved:
		dst = append(dst, `{"removed":{"block_hashes":[`...)
		for i, h := range ev.Hashes {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = strconv.AppendUint(dst, h, 10)
		}
		dst = append(dst, "]}}"...)
	case KindCleared:
		dst = append(dst, `"cleared"`...)
	default:
		dst = append(dst, "null"...)
	}
	dst = append(dst, `,"dp_rank":`...)
	dst = strconv.AppendUint(dst, uint64(ev.DPRank), 10)
	dst = append(dst, "}}"...)
	return dst
}

// MarshalJSON implements json.Marshaler with AppendJSON, after Validate.
func (e Event) MarshalJSON() ([]byte, error) {
	if err := e.Validate(); err != nil {
		return nil, err
	}
	return AppendJSON(nil, &e), nil
}

// UnmarshalJSON implements json.Unmarshaler with DecodeJSON.
func (e *Event) UnmarshalJSON(data []byte) error { return DecodeJSON(data, e) }

// DecodeJSON decodes exactly one JSON RouterEvent (surrounding whitespace
// allowed) into ev, overwriting it. On error ev is left in an unspecified
// state.
func DecodeJSON(data []byte, ev *Event) error {
	s := jsonScanner{b: data}
	if err := s.event(ev); err != nil {
		return err
	}
	s.ws()
	if s.i != len(s.b) {
		return s.errf("unexpected data after the event")
	}
	return nil
}

// DecodeJSONEvents decodes a sequence of JSON RouterEvents and appends them
// to dst: one event, events separated by whitespace (JSON lines), or one
// JSON array of events. On error it returns the events decoded before the
// bad one together with the error (which names the event's position).
func DecodeJSONEvents(dst []Event, data []byte) ([]Event, error) {
	s := jsonScanner{b: data}
	s.ws()
	if s.peek() == '[' {
		n := 0
		err := s.array(func() error {
			var ev Event
			if err := s.event(&ev); err != nil {
				return &EventError{Index: n, Err: err}
			}
			dst = append(dst, ev)
			n++
			return nil
		})
		if err != nil {
			return dst, err
		}
		s.ws()
		if s.i != len(s.b) {
			return dst, s.errf("unexpected data after the event array")
		}
		return dst, nil
	}
	for n := 0; ; n++ {
		s.ws()
		if s.i == len(s.b) {
			return dst, nil
		}
		var ev Event
		if err := s.event(&ev); err != nil {
			return dst, &EventError{Index: n, Err: err}
		}
		dst = append(dst, ev)
	}
}

// jsonScanner reads JSON from a byte slice. Errors wrap ErrMalformed.
type jsonScanner struct {
	b []byte
	i int
}

func (s *jsonScanner) errf(format string, args ...any) error {
	return fmt.Errorf("%w: json at byte %d: %s", ErrMalformed, s.i, fmt.Sprintf(format, args...))
}

func (s *jsonScanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek returns the next byte after whitespace, or 0 at the end.
func (s *jsonScanner) peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *jsonScanner) expect(c byte) error {
	if s.peek() != c {
		if s.i >= len(s.b) {
			return s.errf("want %q, got end of input", c)
		}
		return s.errf("want %q, got %q", c, s.b[s.i])
	}
	s.i++
	return nil
}

// literal consumes lit (true, false, null) if it is next.
func (s *jsonScanner) literal(lit string) bool {
	s.ws()
	if len(s.b)-s.i >= len(lit) && string(s.b[s.i:s.i+len(lit)]) == lit {
		s.i += len(lit)
		return true
	}
	return false
}

// null consumes a null if one is next.
func (s *jsonScanner) null() bool { return s.literal("null") }

// str reads a string and returns its content. Without escapes the result
// aliases the input; with escapes it is decoded into a new slice.
func (s *jsonScanner) str() ([]byte, error) {
	if err := s.expect('"'); err != nil {
		return nil, err
	}
	start := s.i
	escaped := false
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			if !escaped {
				return s.b[start : s.i-1], nil
			}
			return unescape(s.b[start : s.i-1])
		case c == '\\':
			escaped = true
			s.i += 2
		case c < 0x20:
			return nil, s.errf("control character 0x%02x in string", c)
		default:
			s.i++
		}
	}
	return nil, s.errf("unterminated string")
}

// uint reads a non-negative JSON integer no larger than max. Fractions,
// exponents, signs and leading zeros are errors (Dynamo's serde reads these
// fields as u64/u32, which rejects them too).
func (s *jsonScanner) uint(what string, max uint64) (uint64, error) {
	s.ws()
	start := s.i
	var v uint64
	for s.i < len(s.b) {
		c := s.b[s.i]
		if c < '0' || c > '9' {
			break
		}
		d := uint64(c - '0')
		if v > (math.MaxUint64-d)/10 {
			return 0, s.errf("%s: integer overflows uint64", what)
		}
		v = v*10 + d
		s.i++
	}
	n := s.i - start
	if n == 0 {
		if s.i < len(s.b) && s.b[s.i] == '-' {
			return 0, s.errf("%s: negative number", what)
		}
		return 0, s.errf("%s: want an unsigned integer", what)
	}
	if n > 1 && s.b[start] == '0' {
		return 0, s.errf("%s: leading zero", what)
	}
	if s.i < len(s.b) {
		switch s.b[s.i] {
		case '.', 'e', 'E':
			return 0, s.errf("%s: want an integer, got a fraction or exponent", what)
		}
	}
	if v > max {
		return 0, s.errf("%s: %d out of range (max %d)", what, v, max)
	}
	return v, nil
}

// object iterates over an object's members, calling fn with each key; fn
// must consume the value.
func (s *jsonScanner) object(fn func(key []byte) error) error {
	if err := s.expect('{'); err != nil {
		return err
	}
	if s.peek() == '}' {
		s.i++
		return nil
	}
	for {
		key, err := s.str()
		if err != nil {
			return err
		}
		if err := s.expect(':'); err != nil {
			return err
		}
		if err := fn(key); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return nil
		default:
			return s.errf("want ',' or '}' in object")
		}
	}
}

// array iterates over an array's elements; fn must consume each element.
func (s *jsonScanner) array(fn func() error) error {
	if err := s.expect('['); err != nil {
		return err
	}
	if s.peek() == ']' {
		s.i++
		return nil
	}
	for {
		if err := fn(); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			return nil
		default:
			return s.errf("want ',' or ']' in array")
		}
	}
}

// skip consumes one value of any type, validating it.
func (s *jsonScanner) skip(depth int) error {
	if depth > maxDepth {
		return s.errf("nesting deeper than %d", maxDepth)
	}
	switch c := s.peek(); {
	case c == '{':
		return s.object(func([]byte) error { return s.skip(depth + 1) })
	case c == '[':
		return s.array(func() error { return s.skip(depth + 1) })
	case c == '"':
		_, err := s.str()
		return err
	case c == '-' || (c >= '0' && c <= '9'):
		return s.number()
	case s.literal("true"), s.literal("false"), s.literal("null"):
		return nil
	case c == 0:
		return s.errf("unexpected end of input")
	default:
		return s.errf("unexpected %q", c)
	}
}

// number consumes a number per the JSON grammar.
func (s *jsonScanner) number() error {
	digits := func() int {
		n := 0
		for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
			s.i++
			n++
		}
		return n
	}
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	start := s.i
	if n := digits(); n == 0 || (n > 1 && s.b[start] == '0') {
		return s.errf("invalid number")
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if digits() == 0 {
			return s.errf("invalid number")
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if digits() == 0 {
			return s.errf("invalid number")
		}
	}
	return nil
}

// event decodes one RouterEvent object into ev.
func (s *jsonScanner) event(ev *Event) error {
	*ev = Event{}
	var haveWorker, haveEvent bool
	err := s.object(func(key []byte) error {
		switch string(key) {
		case "worker_id":
			v, err := s.uint("worker_id", math.MaxUint64)
			ev.WorkerID, haveWorker = v, true
			return err
		case "storage_tier":
			if s.null() {
				return nil // serde default
			}
			name, err := s.str()
			if err != nil {
				return err
			}
			t, err := ParseTier(string(name))
			if err != nil {
				return fmt.Errorf("%w: %w", ErrMalformed, err)
			}
			ev.Tier = t
			return nil
		case "event":
			haveEvent = true
			return s.kvEvent(ev)
		case "kv_cache_group":
			return s.group(&ev.Group)
		default:
			return s.skip(0)
		}
	})
	if err != nil {
		return err
	}
	if !haveWorker {
		return s.errf("missing worker_id")
	}
	if !haveEvent {
		return s.errf("missing event")
	}
	return checkGroup(ev)
}

// group decodes a kv_cache_group object (null: the zero group).
func (s *jsonScanner) group(g *Group) error {
	*g = Group{}
	if s.null() {
		return nil
	}
	var haveKind bool
	err := s.object(func(key []byte) error {
		switch string(key) {
		case "index":
			v, err := s.uint("kv_cache_group.index", math.MaxUint32)
			g.Index = uint32(v)
			return err
		case "kind":
			name, err := s.str()
			if err != nil {
				return err
			}
			if g.Kind, err = ParseGroupKind(string(name)); err != nil {
				return fmt.Errorf("%w: %w", ErrMalformed, err)
			}
			haveKind = true
			return nil
		case "sliding_window":
			v, err := s.uint("kv_cache_group.sliding_window", math.MaxUint32)
			g.Window = uint32(v)
			return err
		}
		return s.skip(0)
	})
	if err == nil && !haveKind {
		err = s.errf("kv_cache_group: missing kind")
	}
	return err
}

func (s *jsonScanner) kvEvent(ev *Event) error {
	var haveID, haveData bool
	err := s.object(func(key []byte) error {
		switch string(key) {
		case "event_id":
			v, err := s.uint("event_id", math.MaxUint64)
			ev.EventID, haveID = v, true
			return err
		case "dp_rank":
			v, err := s.uint("dp_rank", math.MaxUint32)
			ev.DPRank = uint32(v)
			return err
		case "data":
			haveData = true
			return s.data(ev)
		default:
			return s.skip(0)
		}
	})
	if err != nil {
		return err
	}
	if !haveID {
		return s.errf("missing event.event_id")
	}
	if !haveData {
		return s.errf("missing event.data")
	}
	return nil
}

var errDataVariant = errors.New(`want "cleared", {"stored":{...}} or {"removed":{...}}`)

func (s *jsonScanner) data(ev *Event) error {
	if s.peek() == '"' {
		v, err := s.str()
		if err != nil {
			return err
		}
		if string(v) != "cleared" {
			return s.errf("data: unknown variant %q: %v", v, errDataVariant)
		}
		ev.Kind = KindCleared
		return nil
	}
	n := 0
	err := s.object(func(key []byte) error {
		n++
		if n > 1 {
			return s.errf("data: more than one variant")
		}
		switch string(key) {
		case "stored":
			ev.Kind = KindStored
			return s.stored(ev)
		case "removed":
			ev.Kind = KindRemoved
			return s.removed(ev)
		case "cleared":
			if !s.null() {
				return s.errf("data.cleared: want null")
			}
			ev.Kind = KindCleared
			return nil
		default:
			return s.errf("data: unknown variant %q: %v", key, errDataVariant)
		}
	})
	if err != nil {
		return err
	}
	if n == 0 {
		return s.errf("data: %v", errDataVariant)
	}
	return nil
}

func (s *jsonScanner) stored(ev *Event) error {
	var haveBlocks bool
	err := s.object(func(key []byte) error {
		switch string(key) {
		case "parent_hash":
			if s.null() {
				ev.HasParent, ev.Parent = false, 0
				return nil
			}
			v, err := s.uint("parent_hash", math.MaxUint64)
			ev.HasParent, ev.Parent = true, v
			return err
		case "start_position":
			if s.null() {
				ev.HasStart, ev.StartPosition = false, 0
				return nil
			}
			v, err := s.uint("start_position", math.MaxUint32)
			ev.HasStart, ev.StartPosition = true, uint32(v)
			return err
		case "blocks":
			haveBlocks = true
			ev.Blocks = ev.Blocks[:0]
			return s.array(func() error {
				b, err := s.block()
				ev.Blocks = append(ev.Blocks, b)
				return err
			})
		default:
			return s.skip(0)
		}
	})
	if err != nil {
		return err
	}
	if !haveBlocks {
		return s.errf("missing stored.blocks")
	}
	if ev.Blocks == nil {
		ev.Blocks = []Block{}
	}
	return nil
}

func (s *jsonScanner) block() (Block, error) {
	var b Block
	var haveHash, haveLocal bool
	err := s.object(func(key []byte) error {
		var err error
		switch string(key) {
		case "block_hash":
			b.Hash, err = s.uint("block_hash", math.MaxUint64)
			haveHash = true
		case "tokens_hash":
			b.Local, err = s.uint("tokens_hash", math.MaxUint64)
			haveLocal = true
		default:
			err = s.skip(0)
		}
		return err
	})
	if err != nil {
		return b, err
	}
	if !haveHash || !haveLocal {
		return b, s.errf("block needs block_hash and tokens_hash")
	}
	return b, nil
}

func (s *jsonScanner) removed(ev *Event) error {
	var have bool
	err := s.object(func(key []byte) error {
		if string(key) != "block_hashes" {
			return s.skip(0)
		}
		have = true
		ev.Hashes = ev.Hashes[:0]
		return s.array(func() error {
			h, err := s.uint("block_hashes", math.MaxUint64)
			ev.Hashes = append(ev.Hashes, h)
			return err
		})
	})
	if err != nil {
		return err
	}
	if !have {
		return s.errf("missing removed.block_hashes")
	}
	if ev.Hashes == nil {
		ev.Hashes = []uint64{}
	}
	return nil
}

// unescape decodes the body of a JSON string that contains escapes.
func unescape(body []byte) ([]byte, error) {
	q := make([]byte, 0, len(body)+2)
	q = append(q, '"')
	q = append(q, body...)
	q = append(q, '"')
	var v string
	if err := json.Unmarshal(q, &v); err != nil {
		return nil, fmt.Errorf("%w: json string: %w", ErrMalformed, err)
	}
	return []byte(v), nil
}
