// Package kvevents is the KV event model of DESIGN.md §2 and its codecs.
//
// A worker engine publishes an Event whenever it caches (Stored), evicts
// (Removed) or drops all (Cleared) KV blocks. Events address blocks by the
// engine's opaque sequence hash; Stored events also carry each block's local
// hash (kvhash) so the router can match prompts against them.
//
// The package does no I/O. Codecs: the RouterEvent JSON of DESIGN.md §2
// (Dynamo-compatible field names), the same shape in msgpack, and a decoder
// for vLLM/SGLang ZMQ payloads. Decoders return errors on malformed input and
// never panic. All functions are safe for concurrent use.
package kvevents
