package indexer

// The common Insert refreshes a run of pairs it set before: the same
// prompt (or a conversation's next turn, or a shared system prompt)
// booked again on the same worker, whose blocks the last-Insert cache
// names in order, each one's member for the worker set by one older
// generation whose list holds them from its start (approxgen.go). For
// that run insert's general loop derives every block's entry, member and
// generation move one by one; refreshRun does the same work in a leaf
// loop over the run, with none of the general loop's other cases, and
// hands insert the state its loop would have reached: the run's entries
// in the new generation's list and the run taken over from the older
// generation, its leading items cut off at settle.

// refreshRun refreshes the leading blocks of seqs (sequence hashes) that
// slot holds, with a member set by one generation gi whose list holds
// them in order from its start, found through a.last, and whose expiry
// moves to exp with no change to the low count (both above chaos) and no
// kept later expiry: it sets their members to (exp, g), appends their
// entries to ents and returns how many it refreshed and gi (0 when none).
func (a *Approx) refreshRun(seqs []uint64, slot, g uint32, exp int64, keepLater bool, ents []uint32) (int, uint32, []uint32) {
	if exp <= a.chaos || len(seqs) == 0 || len(a.last) == 0 {
		return 0, 0, ents
	}
	last, entries := a.last, a.entries
	gi := uint32(0)
	var old []uint32 // gi's current list items
	n := 0
	for n < len(seqs) && n < len(last) {
		h, le := seqs[n], last[n]
		if le.seq != h {
			break
		}
		e := &entries[le.ei]
		if e.seq != h || len(e.members) == 0 {
			break
		}
		mb := &e.members[0]
		if mb.slot != slot {
			j, ok := e.find(slot)
			if !ok {
				break
			}
			mb = &e.members[j]
		}
		if mb.exp == exp || (keepLater && mb.exp > exp) || mb.exp <= a.chaos {
			break
		}
		if n == 0 {
			gi = mb.gen
			gp := &a.gens[gi]
			old = gp.ents[gp.lo:]
		}
		if mb.gen != gi || n >= len(old) || old[n] != le.ei {
			break
		}
		mb.exp, mb.gen = exp, g
		ents = append(ents, le.ei)
		n++
	}
	if n == 0 {
		gi = 0
	}
	return n, gi, ents
}
