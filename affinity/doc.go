// Package affinity binds a session id to the worker+rank that served it,
// with an idle TTL (DESIGN.md §4, off by default).
//
// Bindings are advisory: the router uses a binding only while the bound
// worker is eligible, and rebinds otherwise. A binding expires when unused
// for TTL, and is dropped when its worker leaves (DropWorker) or a dispatch
// to it fails (Drop). Expiry is lazy (Get ignores and deletes stale
// entries) plus an explicit Sweep.
//
// Session ids come from clients (and from other replicas), so a Table is
// bounded in bindings and bytes (Config.MaxSessions, Config.MaxBytes): a
// new binding beyond either evicts the least recently bound ones. Evicting
// rather than refusing new sessions because bindings are advisory: a
// flood of ids costs the sessions it pushes out one cache-blind route
// each, and the table serves the current traffic again as soon as the
// flood stops, where refusing would leave new sessions unbound for a TTL.
//
// The package is pure (time enters as a value) and a Table is NOT safe for
// concurrent use; the router serializes access to it.
package affinity
