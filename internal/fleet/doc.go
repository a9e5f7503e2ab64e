// Package fleet runs a whole kvrouter deployment in one process: an
// embedded NATS server (JetStream), N mocker workers each with its own HTTP
// listener on 127.0.0.1, and the router. It backs `kvrouter up`,
// `kvrouter-study replay --compare` (one fresh fleet per policy),
// `kvrouter-study bench frontend` and the end-to-end tests.
//
// The workers and the router are the runtimes the binary's subcommands
// run (app.NewMocker + Run, app.NewServe + Run: `kvrouter mocker` and
// `kvrouter serve`), given pre-bound listeners: the tests exercise the
// code users run, not a copy of its wiring. Workers publish their KV
// events to the JetStream stream and register in the NATS KV bucket,
// exactly as separate processes do; the router consumes the stream and
// watches the registry. With Config.Direct there is no NATS: each
// worker's events go straight into the router's index (the same Apply the
// subscriber calls), and the workers are the router's static workers
// (fast, for tests that are about HTTP behaviour).
//
// New binds the listeners and starts nothing; Run builds and starts it
// all and returns when ctx is done and everything has stopped. Ready is
// closed once the router's index caught up with the stream and the router
// knows every worker.
package fleet
