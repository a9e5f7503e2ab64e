//go:build !amd64 || purego

package indexer

// prefetchSlots does nothing: Go has no prefetch of its own, and a load
// in its place would wait for its line (see prefetch_amd64.go).
func prefetchSlots(slots *uint64, homes *uint64, n int) {}
