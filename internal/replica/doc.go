// Package replica makes several router processes on one NATS one routing
// tier (DESIGN.md §9). It is a shell: the routing core (router, loads)
// stays pure, and this package brings the NATS side, goroutines and
// clocks.
//
// # What converges from where
//
// Durable, from the KV event stream: the prefix index. Every replica
// applies the same JetStream stream (per worker+rank order, dedup by event
// id: eventplane.Subscriber). Replica restores the newest snapshot (index
// dump + the stream position it covers, internal/snapshot), replays the
// stream after it, and reports ready only once the restored and replayed
// events are applied to the index (the subscriber's checkpoint flushes
// the sticky writers), not merely received. Status gives readiness, the
// lag (last stream sequence of the consumed subjects minus the applied
// one) and a one-line detail for /readyz. One replica at a time holds a
// Lease in a NATS KV bucket and, while it does, writes a snapshot every
// Config.SnapshotInterval (when the stream moved) and keeps the newest
// Config.SnapshotKeep; when it dies, another takes the lease within about
// the lease TTL. When NATS loses the lease or snapshot bucket (a server
// restarted with a fresh store), the next operation that fails drops the
// cached handle and the one after creates the bucket again, so the lease
// is taken again within a few renewals; Collector exports the lease
// (kvrouter_replica_lease_held, summing to 1 across replicas), its
// failures and the time of the last snapshot written. A snapshot object
// beyond Config.SnapshotMaxBytes, or one that does not decode, is skipped
// (counted) for the next older one. Stream retention can then be short: a snapshot covers
// what retention dropped. Messages dropped before any snapshot covers them
// are reported (Status.Detail, a warning): the index misses what they
// held. A stream that restarts (recreated, or its last sequence below the
// applied one) clears the index and rebuilds it from the new stream; a
// snapshot of an earlier stream (its identity, the stream's creation time,
// differs) is never restored. A snapshot of this stream ahead of its last
// sequence as read (read before the snapshot's fetch, or from a node that
// just took the stream over) is restored once a new read of the stream
// reaches it; only a stream behind it for 10 s makes the replica give it
// up and replay the whole stream.
//
// Ephemeral, from load sync: active load and session affinity. Each
// replica publishes its own bookings (router.Events.OnBooking: route,
// prefill done, free, session bind) on a core NATS subject
// (eventplane/loadsync, batched, best effort) and applies the others'
// with router.ApplyRemote, into the same load tracker as its own, tagged
// with their origin: remote load counts in every cost term and shows in
// the /route candidate breakdown like local load, and
// router.LoadBreakdown splits it by origin. Replicas send heartbeats; a
// replica unheard for SyncConfig.Timeout has its bookings dropped
// (router.DropOrigin). A lost message costs accuracy, never correctness:
// a remote booking whose free was lost goes with the stale sweep, or with
// its origin's heartbeats. Own messages are ignored. With sync off each
// replica sees only its own traffic.
//
// # Use (the serve runtime)
//
//	cfg := replica.DefaultConfig()                            // flags set fields; cfg.Validate()
//	var ls *replica.LoadSync
//	if cfg.Sync.Enabled {
//		ls, _ = replica.NewLoadSync(conn.NC, cfg.Sync, cfg.ID)
//		routerEvents.OnBooking = ls.Publish                  // before router.New
//	}
//	rt, _ := router.New(rcfg, router.Options{Rand: rng, Events: routerEvents, NewIndex: ...})
//	opts := replica.RouterOptions(rt)                          // Sink: rt.ApplyEvent, or the frontend's Apply
//	opts.SubscriberEvents.OnMessage = fe.ObservePublished
//	rep, _ := replica.New(conn, cfg, opts)                     // replaces the bare eventplane.Subscriber
//	g.Go(func() error { return rep.Run(ctx) })
//	if ls != nil { g.Go(func() error { return ls.Run(ctx, rt) }) }
//	GET /readyz:      st := rep.Status(); 200 when st.Ready, else 503; body st.String()
//	GET /debug/loads: replica.LoadsHandler(rt, ls)            // ls nil with sync off
//	worker left:      rep.Forget(id)
//
// # Concurrency
//
// Replica, Lease and LoadSync are safe for concurrent use. Constructors do
// no I/O and start nothing; Run(ctx) does the work and returns when ctx is
// done. Remote bookings are applied on the NATS subscription's goroutine,
// in the order each origin sent them.
package replica
