// Package fleet runs a whole kvrouter deployment in one process: an
// embedded NATS server (JetStream), N mocker workers each with its own HTTP
// listener on 127.0.0.1, and the router frontend. It backs `kvrouter up`,
// `kvrouter replay --compare` (one fresh fleet per policy) and the
// end-to-end tests.
//
// Workers publish their KV events to the JetStream stream and register in
// the NATS KV bucket, exactly as separate processes would; the frontend
// consumes the stream and watches the registry. With Config.Direct the NATS
// layer is skipped: events go straight from each worker's engine loop into
// the router, and workers are added directly (fast, for tests that are
// about HTTP behaviour).
//
// New binds the listeners and builds everything but starts nothing; Run
// starts it all and returns when ctx is done and everything has stopped.
// Ready is closed once the frontend knows every worker.
package fleet
