// Package eventdump prints KV events as RouterEvent JSON lines (DESIGN.md
// §2), the library behind `kvrouter events decode` and `kvrouter events
// tail`.
//
// Decode turns one payload (vLLM/SGLang ZMQ, RouterEvent JSON or msgpack,
// raw or hex text) into JSON lines; DecodeHex reads hex text. Tail prints
// live events from NATS (a core subscription: no replay of history, no
// consumer state left on the server) or from an engine's ZMQ PUB socket
// until its context ends.
//
// Errors name the command's flags (--format, --block-size): the messages
// are the commands' own. Functions are safe for concurrent use; Tail
// serializes its writes to w.
package eventdump
