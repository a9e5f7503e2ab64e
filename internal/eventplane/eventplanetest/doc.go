// Package eventplanetest holds test helpers for the event plane: an
// embedded NATS per test, a random KV event generator, canonical index dump
// hashes and a deadline-bounded condition wait. Not for production code.
package eventplanetest
