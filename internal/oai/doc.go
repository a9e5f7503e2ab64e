// Package oai holds the OpenAI-compatible wire types kvrouter speaks on both
// sides of the serving path (frontend and mocker worker): request parsing
// with validation, response and streaming-chunk types, OpenAI-style error
// bodies, and a small server-sent-events reader and writer.
//
// Parsing is strict about what routing needs (prompt or messages, token ids
// in range, max tokens) and lenient about everything else: unknown fields
// are kept in the raw body so a proxy can forward them untouched.
//
// Everything here is pure (no I/O beyond the io.Reader/io.Writer passed in)
// and safe for concurrent use; values are not shared.
package oai
