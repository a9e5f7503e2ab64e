package kvevents

import (
	"errors"
	"fmt"
	"math"
	"sync/atomic"

	"github.com/kvrouter/kvrouter/kvhash"
)

// VLLMDecoder decodes the msgpack payloads that vLLM and SGLang publish on
// their ZMQ KV-event socket (DESIGN.md §2, transport 2) into Events.
//
// # Wire format (as found in vllm/distributed/kv_events.py and SGLang's
// python/sglang/srt/disaggregation/kv_events.py)
//
// Both engines declare msgspec structs. Older vLLM and SGLang use
// array_like=True, omit_defaults=True, and tag=True on the event base class:
//
//	EventBatch:  [ts float, events list, data_parallel_rank int|None = None]
//	BlockStored: ["BlockStored", block_hashes, parent_block_hash, token_ids, block_size,
//	              lora_id, medium, lora_name, extra_keys = None, group_idx = None,
//	              kv_cache_spec_kind = None, kv_cache_spec_sliding_window = None, ...]
//	BlockRemoved: ["BlockRemoved", block_hashes, medium, group_idx = None, ...]
//	AllBlocksCleared: ["AllBlocksCleared"]
//
// Each historical version appended fields: SGLang and early vLLM stop after
// lora_id, later vLLM added medium, then lora_name, extra_keys, and the
// hybrid-model fields group_idx / kv_cache_spec_kind /
// kv_cache_spec_sliding_window (newer forks append locality, ownership,
// session_id). omit_defaults drops trailing fields equal to their default,
// so every prefix of at least the required fields is accepted, and fields
// past the known ones are skipped. Current vLLM drops array_like: the batch
// becomes a map {"ts","events","data_parallel_rank"} and each event a map
// with the tag under "type" and defaulted fields omitted. Both forms are
// accepted, mixed freely; unknown keys are skipped.
//
// # Field handling
//
//   - Hashes (ExternalBlockHash = bytes | int): a non-negative int is used as
//     is, a negative int64 is reinterpreted as uint64 bits (as Dynamo does),
//     and ints in [2^63, 2^64) arrive as msgpack uint64. bytes (vLLM's
//     sha256 block hashes) become int.from_bytes(b, "big") mod 2^64, i.e. the
//     last 8 bytes big-endian: exactly the int vLLM itself publishes for the
//     same block with VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES=1, so a fleet that
//     mixes both settings still agrees. (Dynamo's decoder accepts ints only.)
//   - token_ids: a flat list of ints, or, from EAGLE speculative decoding
//     (SGLang's bigram radix keys), a list of token pairs [t_i, t_i+1], one
//     per position. For pairs the first element of each pair is the token at
//     that position, so the blocks are hashed over those; Dynamo instead
//     hashes windows of block_size+1 tokens (firsts plus the final second),
//     which only matches a frontend that hashes the same way. kvrouter's
//     frontend hashes plain blocks (kvhash), so plain blocks are used here.
//   - block_size must equal the configured block size, otherwise the event
//     fails with *BlockSizeError. len(token_ids) must be exactly
//     len(block_hashes) * block_size, otherwise *TokenCountError.
//   - Local hashes: kvhash.Local over each block's tokens with seed
//     kvhash.Seed(lora_name, ""). lora_id (deprecated in vLLM) is ignored. If
//     extra_keys carries vLLM multimodal identifiers (64-hex-digit strings,
//     alone or as [identifier, offset]) for a block, their first 16 hex
//     digits become its mm hashes (kvhash.LocalMM), Dynamo's mapping. The
//     first block of a store with no parent (the block at token 0) may
//     carry cache_salt as a string after the LoRA name: it is folded in
//     with kvhash.SaltFirst, as the router folds a request's salt (see
//     extraKeys). Other extra keys (prompt-embeds digests) are ignored.
//   - medium → Tier, case-insensitive: missing, GPU, DEVICE → device;
//     CPU_TIER2, DISK*, NVME*, STORAGE → disk; other CPU* → host_pinned;
//     EXTERNAL, NETWORK, REMOTE, SHARED → external; anything else → device
//     (Dynamo's default). AllBlocksCleared is device.
//   - KV cache groups (hybrid models, DESIGN.md §13): group_idx,
//     kv_cache_spec_kind and kv_cache_spec_sliding_window become
//     Event.Group. Kinds: full_attention, mla_attention,
//     sink_full_attention → GroupFull; sliding_window, sliding_window_mla →
//     GroupSliding with Window = kv_cache_spec_sliding_window; mamba (vLLM
//     files linear attention under it too) → GroupState. A store that names
//     its kind decides by it and teaches the decoder its group's kind and
//     window (group_idx < 64); an event with only group_idx (removes never
//     carry the kind) takes what its group's stores taught. An event with
//     no group fields (older engines, SGLang) is full-attention group 0, as
//     is group_idx 0 before any store named its kind: for a model without
//     groups nothing changes. Any other kind (chunked_local_attention,
//     encoder_only_attention, cross_attention, unknown, ...), and a
//     group_idx > 0 whose kind was never taught, is dropped and counted in
//     BatchInfo.UnknownGroups: never filed as full attention. Values of an
//     unexpected type in these optional fields are ignored.
//   - SGLang publishes no group fields (python/sglang/srt/mem_cache/events.py,
//     KVCacheEventMixin: BlockStored(block_hashes, parent_block_hash,
//     token_ids, block_size, lora_id, medium), BlockRemoved(block_hashes,
//     medium)). Its hybrid caches (mem_cache/swa_radix_cache.py
//     SWARadixCache, mem_cache/mamba_radix_cache.py MambaRadixCache) use
//     that mixin for the full-attention tree only: a store when a node's
//     full KV is inserted, a remove when it is freed; dropping only a
//     node's sliding-window KV (_tombstone_internal_node, free_swa) or its
//     Mamba state (mamba_value = None) publishes nothing. So SGLang events
//     are full-attention group 0 events, and the router cannot see SWA or
//     Mamba state loss on SGLang workers: it credits the full-attention
//     match there.
//   - data_parallel_rank: the batch's rank when present, else
//     VLLMConfig.DPRank.
//   - EventID is left 0: vLLM events carry none. The transport assigns ids,
//     e.g. from the ZMQ sequence number.
//
// # Errors
//
// A payload that is not well-formed msgpack or not a batch fails as a
// whole: nothing is returned, and the error wraps ErrMalformed. A bad event
// inside a well-formed batch (block size or token count mismatch, missing
// or mistyped fields) fails alone: the other events are still returned, and
// the error joins one *EventError per bad event (find the cause with
// errors.As / errors.Is). The bad event is dropped; skipping a store only
// leaves blocks unindexed, which is safe. Unknown tags, unknown groups and
// empty stores are skipped silently and counted in BatchInfo.
//
// A VLLMDecoder is safe for concurrent use; its only state is what stores
// taught about each group (atomics).
type VLLMDecoder struct {
	cfg VLLMConfig
	// learnt[g] is what the last store of group_idx g that named its kind
	// said: 0 = nothing yet, else learntSet | kind<<32 | window, or
	// learntSet | learntUnknown. Groups >= maxLearnt are never learnt.
	learnt [maxLearnt]atomic.Uint64
}

// VLLMConfig configures a VLLMDecoder.
type VLLMConfig struct {
	// BlockSize is the router's block size in tokens. Required (> 0); events
	// with any other block_size are rejected.
	BlockSize int
	// WorkerID is stamped on every event. Default 0.
	WorkerID uint64
	// DPRank is used when a batch carries no data_parallel_rank. Default 0.
	DPRank uint32
}

// BatchInfo describes a decoded batch.
type BatchInfo struct {
	TS        float64 // the batch's timestamp (seconds since the epoch)
	DPRank    uint32  // rank stamped on the events
	HasDPRank bool    // the payload carried the rank (else it came from VLLMConfig)
	Events    int     // events in the payload
	Skipped   int     // unknown tags, unknown groups, empty stores
	Failed    int     // events dropped with an error
	// UnknownGroups counts the Skipped events of an unknown kv cache group
	// kind (or of a group_idx > 0 no store has named the kind of).
	UnknownGroups int
}

// NewVLLMDecoder returns a decoder for cfg.
func NewVLLMDecoder(cfg VLLMConfig) (*VLLMDecoder, error) {
	if cfg.BlockSize <= 0 {
		return nil, fmt.Errorf("kvevents: block size must be positive, got %d", cfg.BlockSize)
	}
	return &VLLMDecoder{cfg: cfg}, nil
}

// Config returns the decoder's configuration.
func (d *VLLMDecoder) Config() VLLMConfig { return d.cfg }

// Decode decodes one ZMQ payload and appends its events to dst. See the
// type's documentation for the error contract: with a non-nil error the
// returned slice still holds every event that decoded.
func (d *VLLMDecoder) Decode(dst []Event, payload []byte) ([]Event, error) {
	dst, _, err := d.DecodeBatch(dst, payload)
	return dst, err
}

// DecodeBatch is Decode that also reports on the batch.
func (d *VLLMDecoder) DecodeBatch(dst []Event, payload []byte) ([]Event, BatchInfo, error) {
	b := batchState{d: d, orig: len(dst), dst: dst}
	r := mpReader{b: payload}
	err := b.batch(&r)
	if err == nil && !r.eof() {
		err = r.errf("unexpected data after the batch")
	}
	if err != nil {
		return dst[:b.orig], BatchInfo{}, fmt.Errorf("kvevents: vllm batch: %w", err)
	}
	// NB: the rank may follow the events (array form), so events are
	// stamped once the whole batch is read; this keeps decoding one pass.
	if !b.info.HasDPRank {
		b.info.DPRank = d.cfg.DPRank
	}
	for i := b.orig; i < len(b.dst); i++ {
		b.dst[i].DPRank = b.info.DPRank
	}
	return b.dst, b.info, errors.Join(b.errs...)
}

// batchState is one DecodeBatch call in progress.
type batchState struct {
	d      *VLLMDecoder
	orig   int
	dst    []Event
	info   BatchInfo
	errs   []error
	events bool
}

// batch reads the batch envelope, decoding the events in place.
func (b *batchState) batch(r *mpReader) error {
	rank := func() error {
		if r.isNil() {
			return nil
		}
		v, err := r.uint("data_parallel_rank", math.MaxUint32)
		b.info.DPRank, b.info.HasDPRank = uint32(v), true
		return err
	}
	ts := func() error {
		v, ok, err := r.float64()
		if err == nil && !ok {
			err = r.errf("ts: want a number, got %s", r.kindName())
		}
		b.info.TS = v
		return err
	}
	if n, ok, err := r.arrayLen(); err != nil {
		return err
	} else if ok {
		if n < 2 {
			return r.errf("batch: want [ts, events, dp_rank?], got %d elements", n)
		}
		if err := ts(); err != nil {
			return err
		}
		if err := b.eventList(r); err != nil {
			return err
		}
		if n >= 3 {
			if err := rank(); err != nil {
				return err
			}
		}
		for i := 3; i < n; i++ {
			if err := r.skip(); err != nil {
				return err
			}
		}
		return nil
	}
	err := r.fields("batch", func(key []byte) error {
		switch string(key) {
		case "ts":
			return ts()
		case "events":
			if b.events {
				return r.errf("batch: events given twice")
			}
			return b.eventList(r)
		case "data_parallel_rank", "dp_rank":
			return rank()
		}
		return r.skip()
	})
	if err == nil && !b.events {
		err = r.errf("batch: missing events")
	}
	return err
}

// eventList decodes the events array.
func (b *batchState) eventList(r *mpReader) error {
	n, ok, err := r.arrayLen()
	if err != nil {
		return err
	}
	if !ok {
		return r.errf("events: want an array, got %s", r.kindName())
	}
	b.events = true
	b.info.Events = n
	for i := 0; i < n; i++ {
		var raw rawEvent
		if err := raw.parse(r); err != nil {
			// The event's extent is unknown: the rest cannot be trusted.
			return fmt.Errorf("event %d: %w", i, err)
		}
		var keep bool
		b.dst, keep, err = b.d.convert(b.dst, &raw)
		switch {
		case err == errUnknownGroup:
			b.info.Skipped++
			b.info.UnknownGroups++
		case err != nil:
			b.info.Failed++
			b.errs = append(b.errs, &EventError{Index: i, Tag: string(raw.tag), Err: err})
		case !keep:
			b.info.Skipped++
		}
	}
	return nil
}

// rawEvent holds one event's fields as undecoded msgpack values (aliasing
// the payload), so the array and map forms share one converter and nothing
// is allocated before the event is known to be wanted. nil = absent.
type rawEvent struct {
	tag                       []byte
	hashes, parent, tokens    []byte
	blockSize, group, window  []byte
	medium, lora, extra, kind []byte
	fields                    int // array form: fields after the tag
	mapForm                   bool
}

func (e *rawEvent) parse(r *mpReader) error {
	if n, ok, err := r.arrayLen(); err != nil {
		return err
	} else if ok {
		if n == 0 {
			return r.errf("event: empty array")
		}
		tag, ok, err := r.str()
		if err != nil {
			return err
		}
		if !ok {
			return r.errf("event: want a string tag first, got %s", r.kindName())
		}
		e.tag, e.fields = tag, n-1
		var slots []*[]byte
		switch string(tag) {
		case "BlockStored":
			slots = []*[]byte{&e.hashes, &e.parent, &e.tokens, &e.blockSize, nil /* lora_id */, &e.medium, &e.lora, &e.extra, &e.group, &e.kind, &e.window}
		case "BlockRemoved":
			slots = []*[]byte{&e.hashes, &e.medium, &e.group}
		}
		for i := 0; i < n-1; i++ {
			v, err := r.value()
			if err != nil {
				return err
			}
			if i < len(slots) && slots[i] != nil {
				*slots[i] = v
			}
		}
		return nil
	}
	e.mapForm = true
	return r.fields("event", func(key []byte) error {
		v, err := r.value()
		if err != nil {
			return err
		}
		switch string(key) {
		case "type":
			vr := mpReader{b: v}
			tag, ok, err := vr.str()
			if err != nil || !ok {
				return r.errf("event: type must be a string")
			}
			e.tag = tag
		case "block_hashes":
			e.hashes = v
		case "parent_block_hash":
			e.parent = v
		case "token_ids":
			e.tokens = v
		case "block_size":
			e.blockSize = v
		case "medium":
			e.medium = v
		case "lora_name":
			e.lora = v
		case "extra_keys":
			e.extra = v
		case "group_idx":
			e.group = v
		case "kv_cache_spec_kind":
			e.kind = v
		case "kv_cache_spec_sliding_window":
			e.window = v
		}
		return nil
	})
}

// convert turns a raw event into an Event appended to dst. keep is false for
// events skipped on purpose.
func (d *VLLMDecoder) convert(dst []Event, e *rawEvent) ([]Event, bool, error) {
	switch string(e.tag) {
	case "BlockStored", "BlockRemoved", "AllBlocksCleared":
	default:
		if e.tag == nil {
			return dst, false, fmt.Errorf("%w: event without a type tag", ErrMalformed)
		}
		return dst, false, nil // unknown tag
	}
	ev := Event{WorkerID: d.cfg.WorkerID}
	if string(e.tag) == "AllBlocksCleared" {
		ev.Kind = KindCleared
		return append(dst, ev), true, nil
	}
	var err error
	if ev.Group, err = d.group(e); err != nil {
		return dst, false, err
	}
	if e.hashes == nil {
		return dst, false, fmt.Errorf("%w: missing block_hashes", ErrMalformed)
	}
	if ev.Tier, err = optMedium(e.medium); err != nil {
		return dst, false, err
	}
	hr := mpReader{b: e.hashes}
	n, ok, err := hr.arrayLen()
	if err != nil {
		return dst, false, err
	}
	if !ok {
		return dst, false, hr.errf("block_hashes: want an array, got %s", hr.kindName())
	}
	if string(e.tag) == "BlockRemoved" {
		ev.Kind = KindRemoved
		ev.Hashes = make([]uint64, n)
		for i := range ev.Hashes {
			if ev.Hashes[i], err = hashValue(&hr, "block_hashes"); err != nil {
				return dst, false, err
			}
		}
		return append(dst, ev), true, nil
	}
	return d.stored(dst, e, ev, &hr, n)
}

func (d *VLLMDecoder) stored(dst []Event, e *rawEvent, ev Event, hr *mpReader, n int) ([]Event, bool, error) {
	ev.Kind = KindStored
	if e.tokens == nil || e.blockSize == nil || (!e.mapForm && e.fields < 4) {
		return dst, false, fmt.Errorf("%w: BlockStored needs block_hashes, parent_block_hash, token_ids and block_size", ErrMalformed)
	}
	br := mpReader{b: e.blockSize}
	bs, err := br.uint("block_size", math.MaxInt32)
	if err != nil {
		return dst, false, err
	}
	B := d.cfg.BlockSize
	if int(bs) != B {
		return dst, false, &BlockSizeError{Got: int(bs), Want: B}
	}
	if e.parent != nil {
		pr := mpReader{b: e.parent}
		if !pr.isNil() {
			if ev.Parent, err = hashValue(&pr, "parent_block_hash"); err != nil {
				return dst, false, err
			}
			ev.HasParent = true
		}
	}
	tr := mpReader{b: e.tokens}
	nt, ok, err := tr.arrayLen()
	if err != nil {
		return dst, false, err
	}
	if !ok {
		return dst, false, tr.errf("token_ids: want an array, got %s", tr.kindName())
	}
	if nt != n*B {
		return dst, false, &TokenCountError{Tokens: nt, Blocks: n, BlockSize: B}
	}
	if n == 0 {
		return dst, false, nil // empty store: nothing to index
	}
	eagle := false
	if c, _ := tr.peek(); (c >= 0x90 && c <= 0x9f) || c == 0xdc || c == 0xdd {
		eagle = true
	}
	seed := kvhash.DefaultSeed
	var loraName []byte
	if e.lora != nil {
		lr := mpReader{b: e.lora}
		if !lr.isNil() {
			name, ok, err := lr.str()
			if err != nil || !ok {
				return dst, false, fmt.Errorf("%w: lora_name: want a string", ErrMalformed)
			}
			seed = kvhash.Seed(string(name), "")
			loraName = name
		}
	}
	var xr mpReader
	extra := 0 // per-block extra_keys entries left to read
	if e.extra != nil {
		xr = mpReader{b: e.extra}
		if !xr.isNil() {
			m, ok, err := xr.arrayLen()
			if err != nil || !ok {
				return dst, false, fmt.Errorf("%w: extra_keys: want an array or nil", ErrMalformed)
			}
			extra = m
		}
	}
	var stack [256]uint32
	buf := stack[:0]
	if B <= len(stack) {
		buf = stack[:B]
	} else {
		buf = make([]uint32, B)
	}
	var mm []uint64
	ev.Blocks = make([]Block, n)
	for i := range ev.Blocks {
		if ev.Blocks[i].Hash, err = hashValue(hr, "block_hashes"); err != nil {
			return dst, false, err
		}
		for j := range buf {
			if buf[j], err = token(&tr, eagle); err != nil {
				return dst, false, err
			}
		}
		mm = mm[:0]
		var salt []byte
		if i < extra {
			// Only the block at token 0 can carry cache_salt: the first
			// block of a store with no parent.
			if mm, salt, err = extraKeys(&xr, mm, loraName, i == 0 && !ev.HasParent); err != nil {
				return dst, false, err
			}
		}
		if len(mm) > 0 {
			ev.Blocks[i].Local = kvhash.LocalMM(buf, mm, seed)
		} else {
			ev.Blocks[i].Local = kvhash.Local(buf, seed)
		}
		if len(salt) > 0 {
			ev.Blocks[i].Local = kvhash.SaltFirst(ev.Blocks[i].Local, string(salt))
		}
	}
	return append(dst, ev), true, nil
}

// token reads one token id (the first of a pair for EAGLE payloads).
func token(r *mpReader, eagle bool) (uint32, error) {
	if eagle {
		n, ok, err := r.arrayLen()
		if err != nil {
			return 0, err
		}
		if !ok || n != 2 {
			return 0, r.errf("token_ids: want token pairs throughout")
		}
		t, err := r.uint("token_ids", math.MaxUint32)
		if err != nil {
			return 0, err
		}
		_, err = r.uint("token_ids", math.MaxUint32)
		return uint32(t), err
	}
	// Fast path for the common encodings (fixint, uint16, uint32).
	if b, off := r.b, r.off; off < len(b) {
		switch c := b[off]; {
		case c <= 0x7f:
			r.off++
			return uint32(c), nil
		case c == 0xcd && off+3 <= len(b):
			r.off += 3
			return uint32(b[off+1])<<8 | uint32(b[off+2]), nil
		case c == 0xce && off+5 <= len(b):
			r.off += 5
			return uint32(b[off+1])<<24 | uint32(b[off+2])<<16 | uint32(b[off+3])<<8 | uint32(b[off+4]), nil
		}
	}
	t, err := r.uint("token_ids", math.MaxUint32)
	return uint32(t), err
}

// hashValue reads an ExternalBlockHash: int (negative int64 reinterpreted as
// uint64) or bytes (big-endian integer mod 2^64, as vLLM converts them).
func hashValue(r *mpReader, what string) (uint64, error) {
	v, k, err := r.integer()
	if err != nil {
		return 0, err
	}
	if k != notInt {
		return v, nil
	}
	b, ok, err := r.bin()
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, r.errf("%s: want an int or bytes hash, got %s", what, r.kindName())
	}
	return bytesHash(b), nil
}

// bytesHash is int.from_bytes(b, "big") & (2**64 - 1): the last 8 bytes,
// big-endian.
func bytesHash(b []byte) uint64 {
	if len(b) > 8 {
		b = b[len(b)-8:]
	}
	var v uint64
	for _, c := range b {
		v = v<<8 | uint64(c)
	}
	return v
}

// extraKeys reads one block's extra_keys entry (nil or a list of keys),
// appends the multimodal hashes found in it to dst and, when first (the
// block at token 0), returns its cache salt.
//
// vLLM builds the entry as LoRA name (when lora_name is set) + mm keys +
// cache_salt (block 0 only) + prompt-embeds digests (bytes). mm keys are
// [identifier, offset] pairs; older vLLM sent the bare identifier string.
// So in block 0 the last bare string after the LoRA slot is the salt, and
// any bare string before it an old-style mm identifier. NB: old-style vLLM
// with an image in block 0 and no salt is read as salted by the image's
// identifier: that prompt then matches nothing (never another prompt).
func extraKeys(r *mpReader, dst []uint64, lora []byte, first bool) ([]uint64, []byte, error) {
	if r.isNil() {
		return dst, nil, nil
	}
	n, ok, err := r.arrayLen()
	if err != nil {
		return dst, nil, err
	}
	if !ok {
		return dst, nil, r.skip() // unexpected shape: ignore, extra keys are advisory
	}
	var salt []byte
	for i := 0; i < n; i++ {
		v, err := r.value()
		if err != nil {
			return dst, nil, err
		}
		vr := mpReader{b: v}
		tuple := false
		if m, ok, _ := vr.arrayLen(); ok && m >= 1 { // [identifier, offset]
			v = vr.b[vr.off:]
			vr = mpReader{b: v}
			tuple = true
		}
		s, ok, _ := vr.str()
		if !ok || (i == 0 && !tuple && lora != nil && string(s) == string(lora)) {
			continue
		}
		if first && !tuple {
			if salt != nil {
				if h, ok := mmIdentifier(salt); ok {
					dst = append(dst, h)
				}
			}
			salt = s
			continue
		}
		if h, ok := mmIdentifier(s); ok {
			dst = append(dst, h)
		}
	}
	return dst, salt, nil
}

// mmIdentifier maps vLLM's canonical multimodal identifier (a 64-digit hex
// digest) to its first 64 bits.
func mmIdentifier(s []byte) (uint64, bool) {
	if len(s) != 64 {
		return 0, false
	}
	var v uint64
	for i, c := range s {
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, false
		}
		if i < 16 {
			v = v<<4 | uint64(d)
		}
	}
	return v, true
}

// optMedium maps an optional raw medium value to a tier.
func optMedium(raw []byte) (Tier, error) {
	if raw == nil {
		return TierDevice, nil
	}
	r := mpReader{b: raw}
	if r.isNil() {
		return TierDevice, nil
	}
	s, ok, err := r.str()
	if err != nil || !ok {
		return 0, fmt.Errorf("%w: medium: want a string or nil", ErrMalformed)
	}
	return MediumTier(string(s)), nil
}

// MediumTier maps a vLLM/SGLang/LMCache "medium" string to a storage tier
// (case-insensitive): "" , GPU, DEVICE → device; CPU_TIER2, DISK*, NVME*,
// STORAGE → disk; other CPU* → host_pinned; EXTERNAL, NETWORK, REMOTE,
// SHARED → external; unknown → device (Dynamo's default).
func MediumTier(medium string) Tier {
	var up [32]byte
	if len(medium) > len(up) {
		return TierDevice
	}
	u := up[:len(medium)]
	for i := 0; i < len(medium); i++ {
		c := medium[i]
		if c >= 'a' && c <= 'z' {
			c -= 'a' - 'A'
		}
		u[i] = c
	}
	s := string(u) // NB: no allocation for comparisons/switch in Go.
	hasPrefix := func(p string) bool { return len(s) >= len(p) && s[:len(p)] == p }
	switch {
	case s == "" || s == "GPU" || s == "DEVICE":
		return TierDevice
	case s == "CPU_TIER2" || s == "STORAGE" || hasPrefix("DISK") || hasPrefix("NVME"):
		return TierDisk
	case hasPrefix("CPU"):
		return TierHostPinned
	case s == "EXTERNAL" || s == "NETWORK" || s == "REMOTE" || s == "SHARED":
		return TierExternal
	}
	return TierDevice
}
