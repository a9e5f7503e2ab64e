package indexer

import (
	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/kvhash"
)

// PrefixResolver names the prefix behind a worker's engine block hash:
// Groups resolves the parent of a sliding or state group's store through
// it when the parent is a full-attention block (DESIGN.md §13). Flash,
// Radix and Sharded implement it.
type PrefixResolver interface {
	// PrefixOf returns the prefix id (kvhash.PrefixNext chain of the local
	// hashes from the root) of the block worker w holds under engine hash
	// hash; ok is false when w does not hold it. Safe for concurrent use
	// with lookups and other workers' writes.
	PrefixOf(w kvevents.Worker, hash uint64) (id uint64, ok bool)
}

var (
	_ PrefixResolver = (*Flash)(nil)
	_ PrefixResolver = (*Radix)(nil)
	_ PrefixResolver = (*Sharded)(nil)
)

// PrefixOf implements PrefixResolver: the entry's id is the prefix id.
func (f *Flash) PrefixOf(w kvevents.Worker, hash uint64) (uint64, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	slot, ok := f.slots.lookup(w)
	if !ok {
		return 0, false
	}
	i, ok := f.tables[slot].get(hash)
	if !ok {
		return 0, false
	}
	return f.at(i).seq, true
}

// PrefixOf implements PrefixResolver: nodes keep no id, so it chains the
// locals of the node's path from the root.
func (r *Radix) PrefixOf(w kvevents.Worker, hash uint64) (uint64, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	slot, ok := r.slots.lookup(w)
	if !ok {
		return 0, false
	}
	ni, ok := r.tables[slot].get(hash)
	if !ok {
		return 0, false
	}
	var stack [64]uint64
	path := stack[:0]
	for ; ni != rootNode; ni = r.at(ni).parent {
		path = append(path, r.at(ni).local)
	}
	id := path[len(path)-1]
	for k := len(path) - 2; k >= 0; k-- {
		id = kvhash.PrefixNext(id, path[k])
	}
	return id, true
}

// PrefixOf implements PrefixResolver through w's shard.
func (s *Sharded) PrefixOf(w kvevents.Worker, hash uint64) (uint64, bool) {
	if p, ok := s.shards[s.ShardOf(w.ID)].(PrefixResolver); ok {
		return p.PrefixOf(w, hash)
	}
	return 0, false
}
