//go:build !linux

package router

import "time"

// threadCPU is unavailable off Linux; benchmarks then report wall times only.
func threadCPU() (time.Duration, bool) { return 0, false }
