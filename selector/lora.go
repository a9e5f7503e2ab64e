package selector

import (
	"encoding/binary"
	"hash/fnv"
	"slices"
)

// LoRA tiers, best first: a request for an adapter prefers the workers that
// have it loaded, then the workers with a free adapter slot, then any.
const (
	LoRATierLoaded = iota // the adapter is loaded on the worker
	LoRATierFree          // not loaded, but the worker has a free slot
	LoRATierAny           // not loaded and every slot taken
)

// LoRATier is the tier of candidate c for adapter lora. A candidate that
// does not report its adapters (LoRAKnown false) counts as having a free
// slot: it may load the adapter, but it is not known to hold it.
func LoRATier(c *Candidate, lora string) int {
	if !c.LoRAKnown {
		return LoRATierFree
	}
	if slices.Contains(c.LoRAs, lora) {
		return LoRATierLoaded
	}
	if c.MaxLoRAs <= 0 || len(c.LoRAs) < c.MaxLoRAs {
		return LoRATierFree
	}
	return LoRATierAny
}

// RendezvousWeight is the highest-random-weight score of worker id for
// adapter lora: a fixed mix of both, seeded by nothing, so every router
// replica and every restart agrees. Removing a worker moves only the
// adapters whose highest weight was that worker's.
func RendezvousWeight(lora string, id uint64) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(lora))
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], id)
	_, _ = h.Write(b[:])
	// splitmix64 finalizer: FNV's last bytes mix weakly into the high bits.
	x := h.Sum64()
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// Rendezvous returns the worker id among ids with the highest
// RendezvousWeight for lora (ties to the smaller id); ok is false when ids
// is empty.
func Rendezvous(lora string, ids []uint64) (best uint64, ok bool) {
	var bw uint64
	for _, id := range ids {
		w := RendezvousWeight(lora, id)
		if !ok || w > bw || (w == bw && id < best) {
			best, bw, ok = id, w, true
		}
	}
	return best, ok
}

// loraFilter keeps, for a request naming an adapter, only the eligible
// candidates of the best LoRA tier: the workers that have it loaded (the
// cost then chooses among them), or, when nobody has, the one worker the
// rendezvous hash picks among the best remaining tier, so the adapter's
// first requests converge on one worker instead of loading it everywhere.
// It does nothing when no eligible candidate reports its adapters (a fleet
// that says nothing keeps the plain cost choice).
func loraFilter(req *Request, cands []Candidate, out []Reason) {
	if req.LoRA == "" {
		return
	}
	best, known := LoRATierAny+1, false
	for i := range cands {
		if out[i] != ReasonNone {
			continue
		}
		known = known || cands[i].LoRAKnown
		best = min(best, LoRATier(&cands[i], req.LoRA))
	}
	if !known {
		return
	}
	if best == LoRATierLoaded {
		for i := range cands {
			if out[i] == ReasonNone && LoRATier(&cands[i], req.LoRA) != best {
				out[i] = ReasonLoRA
			}
		}
		return
	}
	var ids []uint64
	for i := range cands {
		if out[i] == ReasonNone && LoRATier(&cands[i], req.LoRA) == best {
			ids = append(ids, cands[i].Worker.ID)
		}
	}
	win, _ := Rendezvous(req.LoRA, ids)
	for i := range cands {
		if out[i] == ReasonNone && cands[i].Worker.ID != win {
			out[i] = ReasonLoRA
		}
	}
}
