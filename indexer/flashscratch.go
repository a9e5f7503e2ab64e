package indexer

import "sync"

// matchScratch holds the buffers of one Flash lookup (match) that are
// written before they are read: the alive and slot lists, the stride
// window's ids, sets and homes, the drop offsets, markDrops' slot
// positions and placeByRank's keys. As stack arrays Go zeroed them, about
// 8 KiB per lookup (per shard); pooled, a lookup takes one from its P's
// cache of the pool and zeroes nothing. Lookups run on many goroutines at
// once, so the scratch is never shared: each match takes its own and
// gives it back when done. Warm lookups (BenchmarkFindMatches, flash,
// alternated binaries pinned to CPU 1, medians of 7, load ~2): depth 16
// over 8 workers 315 -> 225 ns, depth 64 over 8 512 -> 459 ns, over 64
// workers 1246 -> 1225 ns; cold ones (BenchmarkLookupCold, one shard)
// hide the stores behind their misses and do not change beyond the noise.
type matchScratch struct {
	alive             [2 * aliveStack]uint32
	seqs, sets, homes [stackStride + 1]uint64
	drops             [stackStride]int32
	pos               slotPos
	rank              rankScratch
}

// rankScratch is rankOrder's and placeByRank's scratch: the keys and each
// rank's index in s0 (read only for the ranks seen, so never zeroed).
type rankScratch struct {
	keys [orderStack]uint64
	at   [scatterRanks]uint8
}

var matchPool = sync.Pool{New: func() any { return new(matchScratch) }}
