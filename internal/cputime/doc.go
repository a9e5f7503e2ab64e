// Package cputime reads the calling OS thread's CPU time, so benchmarks can
// split a latency tail into work and time spent descheduled: on a loaded
// machine a call's wall time includes every slice another process ran in,
// its thread CPU time does not.
//
// The caller must keep its goroutine on one OS thread across the two reads
// (runtime.LockOSThread); otherwise the difference mixes two threads.
//
// Sched splits a whole process's time the same way: on a CPU, or runnable
// and waiting for one while other processes run.
package cputime
