package benchindex

// CutLookups cuts every lookup of s to its first n blocks (Config.
// LookupBlocks) and returns how many were already shorter (kept whole).
// The cut lookups share their backing arrays with the originals. n <= 0
// changes nothing.
func (s *Stream) CutLookups(n int) (shorter int) {
	if n <= 0 {
		return 0
	}
	for i := range s.Lookups {
		l := &s.Lookups[i]
		if len(l.Locals) < n {
			shorter++
			continue
		}
		l.Locals = l.Locals[:n:n]
	}
	return shorter
}
