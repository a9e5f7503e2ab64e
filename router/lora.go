package router

import (
	"fmt"
	"slices"
)

// SetWorkerLoRAs records the adapters loaded on worker id (as its engine
// reports them, e.g. vLLM's GET /v1/models) and marks it LoRAKnown; the
// slot count stays the registered MaxLoRAs. It fails with ErrUnknownWorker
// for a worker not added, ErrBadWorker beyond MaxWorkerLoRAs. The slice is
// copied: candidates share the stored one, never written after.
func (r *Router) SetWorkerLoRAs(id uint64, loaded []string) error {
	r.mu.Lock() // no load or prediction read: needs no settle
	defer r.mu.Unlock()
	ws := r.workers[id]
	if ws == nil {
		return fmt.Errorf("%w: %d", ErrUnknownWorker, id)
	}
	if err := checkLoRAs(id, ws.info.MaxLoRAs, loaded); err != nil {
		return err
	}
	ws.info.LoRAKnown = true
	ws.info.LoRAs = slices.Clone(loaded)
	return nil
}

func checkLoRAs(id uint64, maxLoRAs int, loaded []string) error {
	if maxLoRAs < 0 {
		return fmt.Errorf("%w: worker %d: negative max loras %d", ErrBadWorker, id, maxLoRAs)
	}
	if len(loaded) > MaxWorkerLoRAs {
		return fmt.Errorf("%w: worker %d: %d loaded adapters above %d", ErrBadWorker, id, len(loaded), MaxWorkerLoRAs)
	}
	return nil
}
