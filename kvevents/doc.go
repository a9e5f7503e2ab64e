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
// The hot paths are hand-written (no reflection) and allocate only the
// events' own slices. Decoders return errors wrapping ErrMalformed on
// malformed input and never panic (fuzzed: FuzzDecodeJSON, FuzzDecodeMsgpack,
// FuzzDecodeVLLM). Invariant: every event a decoder returns passes
// Event.Validate, and AppendJSON/AppendMsgpack of a decoded event decode
// back to the same event.
//
// All functions are safe for concurrent use, and so is a VLLMDecoder.
package kvevents
