// Package queue is the router's bounded priority queue of requests waiting
// for capacity (DESIGN.md §4, off by default).
//
// Two orders: FCFS ranks by priority - arrival (seconds; larger first: a
// priority of p seconds jumps ahead of requests that arrived up to p seconds
// earlier; best tail TTFT), and WSPT ranks by (1 + priority) /
// max(1, uncached_tokens) (larger first: short uncached prompts run first;
// best mean TTFT). Equal keys keep arrival order. Push on a full queue
// returns ErrFull.
//
// Fair puts per-tenant sub-queues in front of that order: tenants (named by
// the TenantHeader request header) are released by weighted deficit round
// robin, one request costing one, so a tenant flooding the queue cannot
// starve the others; within a tenant the policy above orders requests. The
// number of tenants with a sub-queue of their own is bounded; the rest share
// one bucket.
//
// The package is pure (time enters as a value) and NOT safe for concurrent
// use; the router serializes access to it.
package queue
