// Package e2e runs the real binaries: `kvrouter mocker` workers, `kvrouter
// serve` router replicas and real nats-server processes (one server or a
// JetStream cluster), all on loopback, each with its output captured to a
// file that a failing test prints. Its tests check what users run, not an
// in-process copy of it (DESIGN.md §9 replicas, §2 event plane).
//
// The package's TestMain builds the binaries once per test run (Build):
// kvrouter from ./cmd/kvrouter, kvrouter-epp from ./cmd/kvrouter-epp and
// nats-server from the nats-server module version go.mod already requires
// (the embedded server's), so no extra pin and no network beyond the
// module cache. They are built without -race.
// Under -short nothing is built and every test skips.
//
// Harness API, for new end-to-end tests:
//
//	bins                                      // Binaries, built by TestMain
//	n := StartNATS(t, bins.NATSServer)        // one JetStream server
//	c := StartNATSCluster(t, bins.NATSServer, 3) // n1..n3, meta leader elected
//	c.Nodes[i].Kill(); c.Nodes[i].Restart(t, timeout) // kill -9, same ports and store
//	f := StartFleet(t, bins.Kvrouter, FleetConfig{NATSURL: n.URL(), Mockers: 3, Routers: 2,
//		ServeArgs: []string{"--flag", "value"}})        // waits: ready, every mocker seen
//	r := f.Routers[0]; r.Kill(); r.Restart(t)  // kill -9 a replica; same port and flags
//	r.Ready()                                  // GET /readyz: ok, or the body saying why not
//	r.Get("/readyz")                           // status and body of any GET (503 + lag, /debug/loads)
//	f.WaitRouter(t, r, timeout)                // ready again and sees every mocker
//	r.Complete(ctx, prompt, maxTokens)         // POST /v1/completions: worker, overlap header
//	r.CompleteRetry(ctx, prompt, n, timeout)   // retried until answered (counts failures)
//	r.Index(ctx)                               // GET /debug/index; IndexDump.Key compares
//	f.WaitIndexesAgree(t, timeout)             // every replica has the same index
//	f.WaitIndexesMatchMockers(t, timeout)      // ... equal to each mocker's cached blocks
//	StartRouter(t, bins.Kvrouter, "router3", url, flags...) // an extra replica
//	WaitFor(t, timeout, what, cond)            // poll a condition with a deadline
//
// External engine (llm-d-inference-sim SimVersion, built by
// scripts/setup-test-deps; SimBinary skips without it, fails under CI=true):
//
//	sim := SimBinary(t, root)
//	f := StartSimFleet(t, bins.Kvrouter, sim, 3, SimConfig{MapEvents: true}, "--load-poll", "100ms")
//	        // 3 simulators (POD_IP=127.0.0.1:<port>) dialing the router's --zmq-bind,
//	        // the router with --tokenizer remote and them as static workers
//	f.Sims[i].Kill(); f.Sims[i].Restart(t); f.Sims[i].WaitHealthy(t, timeout)
//	WaitWorkerBlocks(t, f.Router, id, min, timeout) // index holds >= min blocks of id
//
// Waits poll a condition with a deadline; nothing sleeps for a fixed time.
// Every process listens on 127.0.0.1 ports picked free by FreePorts, and
// Start's cleanup stops it (SIGTERM, then SIGKILL) when the test ends.
// Not safe for use by parallel tests sharing a Fleet.
package e2e
