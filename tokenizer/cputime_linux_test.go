package tokenizer

import (
	"syscall"
	"time"
)

// threadCPU returns the CPU time the calling OS thread has used (Linux
// RUSAGE_THREAD). Benchmarks lock their goroutine to its thread and report
// work per CPU-second, which stays meaningful when the machine is shared:
// wall-clock rates there measure the other tenants too.
func threadCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
