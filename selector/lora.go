package selector

import (
	"encoding/binary"
	"hash/fnv"
	"slices"
)

// LoRA placement (CostTime and CostBlocks). A request naming an adapter
// pays, on each candidate, the adapter's cost there, added to the cost
// as the term Breakdown.LoRA:
//
//	loaded     0                          the adapter is in one of the worker's slots
//	free slot  LoRALoad                   the request waits for the load
//	full       LoRALoad + LoRAEvict       the load unloads an adapter others may need
//	not home   + LoRALoad                 when no eligible worker has it loaded (below)
//
// so the rest of the cost (the queue, the prefill, the decode load)
// decides whether a worker holding the adapter is worth its wait: a hot
// adapter spills onto a free slot once its workers' queues cost more
// than a load. An adapter no eligible worker has loaded has a home, the
// rendezvous worker (RendezvousWeight) among the eligible workers of its
// best tier (free slot, else any); every other worker pays one more
// load, as loading it elsewhere likely loads it twice: other router
// replicas, and this one until its engines report the load (the
// frontend's /v1/models poll), send the adapter's first requests home.
// Under CostBlocks the term is in blocks: ms over the default timing
// model's prefill time per block (Timing.PrefillLin * B).
//
// Nothing is charged for a base-model request, or when no eligible
// candidate reports its adapters (LoRAKnown false everywhere: a fleet
// that says nothing keeps the plain cost); in a mixed fleet a worker that
// reports nothing counts as having a free slot.

// LoRA tiers, best first: what a request for an adapter pays on a worker
// (above).
const (
	LoRATierLoaded = iota // the adapter is loaded on the worker
	LoRATierFree          // not loaded, but the worker has a free slot
	LoRATierAny           // not loaded and every slot taken
)

// Public figures behind DefaultLoRALoad: a rank-16 adapter on every
// projection (q, k, v, o, gate, up, down) of a Llama-3-8B-like model is
// 32 layers x 16 x (2*(4096+4096) + 2*(4096+1024) + 3*(4096+14336)) =
// 41.9M parameters, 84 MB in fp16, read from an NVMe Gen4 SSD at 6 GB/s
// with 100 µs per read (the mocker's disk link, DESIGN.md §7).
const (
	loraAdapterBytes = 32 * 16 * (2*(4096+4096) + 2*(4096+1024) + 3*(4096+14336)) * 2
	loraLoadBytesPS  = 6e9
	loraLoadLatency  = 0.1 // ms
)

// DefaultLoRALoad is Config.LoRALoad's default in ms: the adapter above
// loaded from disk, about 14.1 ms (one already in host memory would load
// over PCIe Gen4 in about 3.4 ms).
const DefaultLoRALoad = loraAdapterBytes/loraLoadBytesPS*1e3 + loraLoadLatency

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

// loraPlan is one request's adapter charges (above): on says there are
// any, home is the adapter's home worker when homed (no eligible worker
// has it loaded), unit converts ms to the cost's units.
type loraPlan struct {
	on, homed   bool
	name        string
	home        uint64
	load, evict float64
	unit        float64
}

// planLoRA plans the adapter charges of req over the eligible candidates
// (out[i] == ReasonNone) under cfg.
func planLoRA(cfg *Config, req *Request, cands []Candidate, out []Reason) loraPlan {
	if req.LoRA == "" || !(cfg.LoRALoad > 0 || cfg.LoRAEvict > 0) {
		return loraPlan{}
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
		return loraPlan{}
	}
	p := loraPlan{on: true, name: req.LoRA, load: cfg.LoRALoad, evict: cfg.LoRAEvict, unit: 1}
	if cfg.Cost == CostBlocks {
		tm := cfg.Timing.orDefault()
		if per := tm.PrefillLin * float64(req.BlockSize); per > 0 {
			p.unit = 1 / per
		}
	}
	if best != LoRATierLoaded {
		var ids []uint64
		for i := range cands {
			if out[i] == ReasonNone && LoRATier(&cands[i], req.LoRA) == best {
				ids = append(ids, cands[i].Worker.ID)
			}
		}
		p.home, p.homed = Rendezvous(req.LoRA, ids)
	}
	return p
}

// charge adds c's adapter term to its scored breakdown b and returns the
// cost.
func (p *loraPlan) charge(c *Candidate, b *Breakdown) float64 {
	ms := 0.0
	switch LoRATier(c, p.name) {
	case LoRATierFree:
		ms = p.load
	case LoRATierAny:
		ms = p.load + p.evict
	}
	if p.homed && c.Worker.ID != p.home {
		ms += p.load
	}
	b.LoRA = ms * p.unit
	b.Cost += b.LoRA
	return b.Cost
}
