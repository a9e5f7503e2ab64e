//go:build !linux

package tokenizer

import "time"

// threadCPU is unavailable off Linux; benchmarks then report wall rates only.
func threadCPU() (time.Duration, bool) { return 0, false }
