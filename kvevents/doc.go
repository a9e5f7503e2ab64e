// Package kvevents is the KV event model of DESIGN.md §2 and its codecs.
//
// A worker engine publishes an Event whenever it caches (Stored), evicts
// (Removed) or drops all (Cleared) KV blocks. Events address blocks by the
// engine's opaque sequence hash; Stored events also carry each block's local
// hash (kvhash) so the router can match prompts against them.
//
// The package does no I/O. Codecs:
//   - JSON (AppendJSON, DecodeJSON, DecodeJSONEvents; Event implements
//     json.Marshaler/Unmarshaler): Dynamo's RouterEvent JSON, field for field.
//   - msgpack (AppendMsgpack, DecodeMsgpack, DecodeMsgpackEvents; Event
//     implements vmihailenco/msgpack's CustomEncoder/CustomDecoder): the same
//     shape as msgpack maps with the same field names.
//   - VLLMDecoder: vLLM/SGLang ZMQ payloads (array and map forms), computing
//     local hashes from token ids at the configured block size.
//
// Event.Group names a hybrid model's KV cache group (DESIGN.md §13). JSON
// and msgpack carry it as "kv_cache_group" ({"index","kind",
// "sliding_window"}) after storage_tier, omitted for the zero group
// (full-attention group 0), so events of models without groups encode as
// before. VLLMDecoder reads vLLM's group_idx / kv_cache_spec_kind /
// kv_cache_spec_sliding_window; kinds it does not model are dropped and
// counted (BatchInfo.UnknownGroups), never read as full attention.
//
// The hot paths are hand-written (no reflection) and allocate only the
// events' own slices. Decoders return errors wrapping ErrMalformed on
// malformed input and never panic (fuzzed: FuzzDecodeJSON, FuzzDecodeMsgpack,
// FuzzDecodeVLLM). Invariant: every event a decoder returns passes
// Event.Validate, and AppendJSON/AppendMsgpack of a decoded event decode
// back to the same event.
//
// All functions are safe for concurrent use, and so is a VLLMDecoder.
package kvevents
