//go:build !linux

package benchindex

import "time"

// threadCPU is unavailable off Linux; benchmarks then report wall times only.
func threadCPU() (time.Duration, bool) { return 0, false }

// processCPU is unavailable off Linux.
func processCPU() time.Duration { return 0 }
