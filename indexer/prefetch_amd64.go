//go:build amd64 && !purego

package indexer

// prefetchSlots asks the CPU to bring the cache line of slots[homes[i]],
// for each i < n, into its caches (PREFETCHT0, prefetch_amd64.s); every
// homes[i] must be an index of slots. A Flash lookup calls it with the
// id-table home slots of its first window's positions before it probes
// any of them (flashread.go, match): each probe of the bisection waits for
// the one before (the count at a midpoint picks the next), so on an index
// larger than the caches their misses came one after another, and
// prefetched they overlap. Go has no prefetch of its own, and loads in
// its place cost more than they saved (flashbatch.go's notes): a load
// that misses holds up retirement until its line arrives, a prefetch
// retires at once.
//
//go:noescape
func prefetchSlots(slots *uint64, homes *uint64, n int)
