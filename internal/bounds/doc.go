// Package bounds accounts for the stores the router keeps on behalf of
// outside parties (sessions, bookings, held events, per-stream buffers):
// each has a limit in entries and in bytes, and its size and limits are
// exported as gauges, so an operator sees a store filling before it
// refuses anything.
//
// A Store only counts; the owner decides what to refuse or evict when
// Fits says no, and keeps Add in step with what it holds.
package bounds
