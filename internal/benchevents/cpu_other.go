//go:build !unix

package benchevents

// cpuSeconds is unknown here; the report then leaves CPU figures at 0.
func cpuSeconds() float64 { return 0 }
