package indexer

// MatchAppender is the allocation-free lookup: AppendMatches appends the
// FindMatches result to dst (reusing its capacity), so a caller that
// keeps dst across lookups allocates nothing in steady state. Radix,
// Flash, Concurrent and Sharded implement it; a gateway embedding an
// index calls it directly instead of discovering it by type assertion.
type MatchAppender interface {
	AppendMatches(dst Overlaps, locals []uint64) Overlaps
}

var (
	_ MatchAppender = (*Radix)(nil)
	_ MatchAppender = (*Flash)(nil)
	_ MatchAppender = (*Concurrent)(nil)
	_ MatchAppender = (*Sharded)(nil)
)

// AppendMatches appends idx's matches for locals to dst: through
// MatchAppender when idx implements it, else by copying FindMatches.
func AppendMatches(idx Index, dst Overlaps, locals []uint64) Overlaps {
	if a, ok := idx.(MatchAppender); ok {
		return a.AppendMatches(dst, locals)
	}
	return append(dst, idx.FindMatches(locals)...)
}
