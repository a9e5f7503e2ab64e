//go:build !linux

package cputime

import "time"

// Supported reports whether Thread works on this platform.
const Supported = false

// Thread is unavailable off Linux: it returns 0, false, and callers report
// wall times only.
func Thread() (time.Duration, bool) { return 0, false }

// Sched is unavailable off Linux: it returns 0, 0, false.
func Sched() (onCPU, waiting time.Duration, ok bool) { return 0, 0, false }

// ThreadSwitches is unavailable off Linux: it returns 0, false.
func ThreadSwitches() (int64, bool) { return 0, false }
