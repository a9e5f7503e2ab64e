package indexer

import (
	"sync"
	"sync/atomic"
)

// spinRW is the reader-writer lock of Flash: a sync.RWMutex whose readers
// (since lookups take no lock, flashrcu.go: Dump, Stats and Check),
// when a writer holds or awaits the lock, first spin a short while (about
// one Concurrent writer batch's hold, a few µs) retrying TryRLock before
// they park, and which counts the readers parked or spinning so that a
// writer in a long event can step aside for them (Flash.yield).
//
// Why: the index's critical sections are short (a lookup is a few µs; a
// Concurrent writer's batch is bounded to ~16 blocks), but a goroutine
// parked on sync.RWMutex is woken onto its waker's run queue and runs only
// when that P's current goroutine blocks, or after an idle M is woken by a
// futex, which takes tens to hundreds of µs on a busy 2-core machine:
// lookups parked behind writers were the lookup tail of the trace replay.
// The spin is bounded (unbounded spinning, tried first, collapsed
// throughput whenever other processes shared the cores: a spinner burns
// the CPU the descheduled lock holder needs: 1.6 s instead of 0.33 s per
// replay).
//
// Measured with Flash.yield and the BlocksPerWorker hint (`kvrouter-study bench
// index --trace ../shared/data/conversation_trace.jsonl.gz --workers 64
// --index flash`, 2 cores shared with other jobs, runs alternated with the
// previous build): lookup p50 23.8 -> 14.0 µs, p99 509-773 -> 124-125 µs,
// p999 3.1-4.8 -> 1.0-1.2 ms, block ops/s 7.7-11.7M -> 12.9-13.3M.
type spinRW struct {
	sync.RWMutex
	waiting atomic.Int32 // readers spinning or parked in RLock
}

// readSpin is how many failed TryRLocks a reader spins through before it
// parks (about 2-4 µs on the 2-core machine).
const readSpin = 1 << 9

// RLock takes the lock for reading.
func (l *spinRW) RLock() {
	if l.TryRLock() {
		return
	}
	l.waiting.Add(1)
	defer l.waiting.Add(-1)
	for range readSpin {
		if l.TryRLock() {
			return
		}
	}
	l.RWMutex.RLock()
}
