package indexer

// MatchAppender is the allocation-free lookup: AppendMatches appends the
// FindMatches result to dst (reusing its capacity), so a caller that
// keeps dst across lookups allocates nothing in steady state. Radix,
// Flash, Concurrent and Sharded implement it; a gateway embedding an
// index calls it directly instead of discovering it by type assertion.
type MatchAppender interface {
	AppendMatches(dst Overlaps, locals []uint64) Overlaps
}

// IDMatchAppender is MatchAppender given the query's prefix ids as well:
// ids[i] is the prefix id of locals[:i+1] (kvhash.AppendPrefixIDs), which
// a caller hashing the prompt gets beside its hashes
// (kvhash.AppendLocalSeqID), so that Flash need not compute them in the
// lookup. Flash, Concurrent and Sharded implement it.
type IDMatchAppender interface {
	// AppendMatchesIDs is AppendMatches with ids, the prefix ids of
	// locals; ids of another length than locals are ignored.
	AppendMatchesIDs(dst Overlaps, locals, ids []uint64) Overlaps
	// WantsIDs reports whether AppendMatchesIDs reads ids (false: it is
	// AppendMatches, and a caller need not compute them).
	WantsIDs() bool
}

var (
	_ MatchAppender = (*Radix)(nil)
	_ MatchAppender = (*Flash)(nil)
	_ MatchAppender = (*Concurrent)(nil)
	_ MatchAppender = (*Sharded)(nil)
)

var (
	_ IDMatchAppender = (*Flash)(nil)
	_ IDMatchAppender = (*Concurrent)(nil)
	_ IDMatchAppender = (*Sharded)(nil)
)

// AppendMatches appends idx's matches for locals to dst: through
// MatchAppender when idx implements it, else by copying FindMatches.
func AppendMatches(idx Index, dst Overlaps, locals []uint64) Overlaps {
	if a, ok := idx.(MatchAppender); ok {
		return a.AppendMatches(dst, locals)
	}
	return append(dst, idx.FindMatches(locals)...)
}
