//go:build !linux

package benchindex

import "time"

// processCPU is unavailable off Linux.
func processCPU() time.Duration { return 0 }
