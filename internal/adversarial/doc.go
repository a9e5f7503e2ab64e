// Package adversarial replays, against real `kvrouter serve` and `kvrouter
// mocker` processes and a real nats-server on loopback, what a hostile or
// buggy client, worker or network sends: registrations that used to crash
// the router, output limits near 2^63, other callers' bookings, slow and
// idle connections, prompts too big to tokenize, malformed input on every
// ingress (HTTP, NATS subjects, the NATS KV registry, ZMQ), worker
// restarts, hundreds of streams cut at random, and a bounded soak. Each
// case asserts the router stays up, refuses with the documented answer,
// and returns to an idle state (no load, no goroutine or memory growth).
//
// The tests live in adversarial_test.go; this package has no API. They
// build the binaries once (internal/e2e.Build) and are skipped with -short.
package adversarial
