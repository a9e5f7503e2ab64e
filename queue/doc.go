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
// The package is pure (time enters as a value) and NOT safe for concurrent
// use; the router serializes access to it.
package queue
