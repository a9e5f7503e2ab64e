package discovery

// Has reports whether worker id is a member (static or registered), for
// the event plane's check that events come from a known worker.
func (f *Fleet) Has(id uint64) bool {
	f.mu.Lock()
	_, ok := f.workers[id]
	f.mu.Unlock()
	return ok
}
