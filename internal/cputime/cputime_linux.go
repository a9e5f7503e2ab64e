package cputime

import (
	"syscall"
	"time"
	"unsafe"
)

// clockThreadCPUTimeID is CLOCK_THREAD_CPUTIME_ID of clock_gettime(2).
const clockThreadCPUTimeID = 3

// Supported reports whether Thread works on this platform.
const Supported = true

// Thread returns the CPU time the calling OS thread has used, in
// nanoseconds, and false if the clock could not be read. The clock is read
// with a raw system call: it never blocks, so the scheduler need not hand
// the P away (a plain syscall.Syscall costs more and may do so).
func Thread() (time.Duration, bool) {
	var ts syscall.Timespec
	if _, _, errno := syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTimeID, uintptr(unsafe.Pointer(&ts)), 0); errno != 0 {
		return 0, false
	}
	return time.Duration(ts.Nano()), true
}

// rusageThread is RUSAGE_THREAD of getrusage(2).
const rusageThread = 1

// ThreadSwitches returns how many times the calling OS thread has been
// switched off a CPU, voluntarily or not (getrusage RUSAGE_THREAD: exact
// counters), and false if they could not be read. An unchanged count
// across a call means the call ran without being descheduled.
func ThreadSwitches() (int64, bool) {
	var ru syscall.Rusage
	if _, _, errno := syscall.RawSyscall(syscall.SYS_GETRUSAGE, rusageThread, uintptr(unsafe.Pointer(&ru)), 0); errno != 0 {
		return 0, false
	}
	return ru.Nvcsw + ru.Nivcsw, true
}
