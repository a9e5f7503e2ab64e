package sim

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/kvrouter/kvrouter/trace"
)

// LoRA adapters (Config.LoRA): every request runs under one of Adapters
// adapters, chosen by its session key: the first of its trace block ids
// that at most 1/Adapters of the requests share (past a system prompt
// every request shares, the conversation's own first block), so the turns
// of a conversation keep their adapter and share KV. Its blocks hash with
// the adapter's name as seed, as a live engine's do (mocker Request.LoRA):
// prefixes under different adapters share no KV.
//
// Each simulated engine holds MaxLoRAs adapters in slots, least recently
// used first, as the mocker does (internal/mockerd) and vLLM's
// --max-loras: a request whose adapter is not loaded loads it, unloading
// the least recently used one when every slot is taken, and enters the
// engine LoadTime later (requests for an adapter still loading wait for
// the same load). The router learns each worker's loaded adapters at
// once (router.SetWorkerLoRAs: what the frontend reads from the engines'
// /v1/models), so the adapter term of its cost (selector lora.go: a
// load where the adapter is not loaded, an eviction where no slot is
// free, a rendezvous home for an adapter loaded nowhere) places requests
// as in the live path; Blind keeps them from it. The router's load time
// is its own estimate (selector DefaultLoRALoad, 14.08 ms), not LoadTime.
//
// Not modelled: vLLM's cap on distinct adapters in one batch (an
// adapter in use is never unloaded there; here its running requests go
// on and only later ones reload it), and the load's share of the pass.

// DefaultLoRALoadTime is LoRAConfig.LoadTime's default: a rank-16 adapter
// on every projection of a Llama-3-8B-like model (about 42M parameters,
// 84 MB in fp16) read at the mocker's disk link (6 GB/s, 100 µs) takes
// 14 ms; a stated constant, not measured here. One already in host
// memory would load over PCIe (25 GB/s) in about 3.4 ms.
const DefaultLoRALoadTime = 15 * time.Millisecond

// DefaultMaxLoRAs is LoRAConfig.MaxLoRAs's default (vLLM's --max-loras
// is 1; multi-adapter deployments raise it).
const DefaultMaxLoRAs = 4

// LoRAConfig configures adapters in the simulation. The zero Adapters is
// off: every request runs on the base model.
type LoRAConfig struct {
	// Adapters is the number of adapters requests are spread over.
	// Default 0 = none.
	Adapters int
	// MaxLoRAs is the adapter slots per engine. Default DefaultMaxLoRAs.
	MaxLoRAs int
	// LoadTime is what loading an adapter into a slot delays its request.
	// Default DefaultLoRALoadTime.
	LoadTime time.Duration
	// Blind keeps the router from learning where adapters are loaded: the
	// workers report none (router WorkerInfo.LoRAKnown false), so the
	// policies place requests as if there were no adapters. Default false.
	Blind bool
}

// Enabled reports whether requests run under adapters.
func (c LoRAConfig) Enabled() bool { return c.Adapters > 0 }

func (c LoRAConfig) validate(cfg *Config) error {
	if !c.Enabled() {
		if c.Adapters < 0 {
			return fmt.Errorf("sim: lora adapters %d must be >= 0", c.Adapters)
		}
		return nil
	}
	var errs []error
	if c.MaxLoRAs < 1 || c.LoadTime < 0 {
		errs = append(errs, fmt.Errorf("sim: max loras %d must be >= 1 and lora load time %v >= 0", c.MaxLoRAs, c.LoadTime))
	}
	if cfg.Disagg.Enabled() {
		errs = append(errs, errors.New("sim: lora adapters with disagg are not simulated"))
	}
	return errors.Join(errs...)
}

// loraName is adapter a's model name.
func loraName(a int) string { return "lora-" + strconv.Itoa(a) }

// sessionKeys returns each record's session key (see above; its last
// block id when every one is shared more widely, its index when it has
// none).
func sessionKeys(recs []trace.Record, adapters int) []uint64 {
	uses := map[uint64]int{}
	for i := range recs {
		for _, id := range recs[i].HashIDs {
			uses[id]++
		}
	}
	keys := make([]uint64, len(recs))
	for i := range recs {
		ids := recs[i].HashIDs
		keys[i] = uint64(i)
		for k, id := range ids {
			if uses[id]*adapters <= len(recs) || k == len(ids)-1 {
				keys[i] = id
				break
			}
		}
	}
	return keys
}

// adapterOf is the adapter of session key x among n: a fixed mix of it.
func adapterOf(x uint64, n int) int {
	// splitmix64 finalizer: neighbouring roots land on unrelated adapters.
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	x ^= x >> 31
	return int(x % uint64(n))
}

// loraAware is a policy told where adapters are loaded.
type loraAware interface {
	loras(w int, loaded []string)
}

func (rp *routerPolicy) loras(w int, loaded []string) {
	// A worker registered with its slots never refuses its own list.
	_ = rp.r.SetWorkerLoRAs(uint64(w), loaded)
}

// useLoRA marks request i's adapter used on worker w at now and returns
// when the request may enter the engine: now when the adapter is loaded,
// when its load lands otherwise (a load starts now when it is not
// loading already, unloading the least recently used adapter if every
// slot is taken).
func (f *fleet) useLoRA(i, w int) time.Duration {
	at, loaded := f.ws[w].lora.Use(loraName(f.p.reqs[i].lora), f.now, f.cfg.LoRA.LoadTime)
	if !loaded {
		return at
	}
	f.rep.LoRALoads++
	f.ws[w].stats.LoRALoads++
	if la, ok := f.pol.(loraAware); ok && !f.cfg.LoRA.Blind {
		la.loras(w, f.ws[w].lora.Loaded())
	}
	return at
}
