package mocker

import (
	"slices"
	"time"
)

// LoRASlots is an engine's LoRA adapter slots (vLLM's --max-loras): the
// loaded adapters, least recently used first, each with the time its load
// lands. A use of an adapter that is not loaded loads it, unloading the
// least recently used one when every slot is taken. The zero value with
// Max set is ready; not safe for concurrent use.
type LoRASlots struct {
	// Max is the number of slots (>= 1).
	Max    int
	loaded []string
	ready  []time.Duration // ready[k]: when loaded[k] is usable
}

// Use marks name used at now. It returns when the adapter is usable (its
// load's landing, now+load for a new load, possibly later than now for
// one still loading) and whether this use loaded it.
func (s *LoRASlots) Use(name string, now, load time.Duration) (ready time.Duration, loaded bool) {
	if k := slices.Index(s.loaded, name); k >= 0 {
		at := s.ready[k]
		s.loaded = append(slices.Delete(s.loaded, k, k+1), name)
		s.ready = append(slices.Delete(s.ready, k, k+1), at)
		return max(at, now), false
	}
	if len(s.loaded) >= s.Max {
		s.loaded, s.ready = slices.Delete(s.loaded, 0, 1), slices.Delete(s.ready, 0, 1)
	}
	at := now + load
	s.loaded, s.ready = append(s.loaded, name), append(s.ready, at)
	return at, true
}

// Loaded returns the loaded adapters, least recently used first (a copy).
func (s *LoRASlots) Loaded() []string { return slices.Clone(s.loaded) }
