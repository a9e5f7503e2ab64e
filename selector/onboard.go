package selector

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/kvrouter/kvrouter/kvevents"
)

// Onboarding cost (DESIGN.md §7; CostTime only). A request whose prefix
// continues in a lower tier does not compute those blocks: the engine
// stages them into G1 over the tier's link first (vLLM's connectors load
// asynchronously, the request waiting while others run). The credit says
// how many blocks it skips; Onboard says how long their load takes, so a
// worker whose hit sits on a slow disk is not priced like a device hit:
//
//	load_t  = backlog_t + MsPerBatch_t + tokens_t * MsPerToken_t   per lower tier t
//	load    = max over t (each tier has its own link)
//	prefill = max(ahead, load) + mine                              instead of ahead + mine
//
// tokens_t are the tokens of the credited blocks that tier t serves (a
// block is served by the tier that credits it, i.e. the fastest holding
// it with the default weights) and backlog_t is the time loads already
// booked on the worker's link still take (Candidate.LinkBacklog). The
// load runs while the queue ahead computes: only its excess delays the
// request.
//
// With an onboarding model the weights need not discount slow tiers any
// more: weight 1 credits a lower-tier block as fully skipped and lets
// the model charge its transfer (what the engine does); a weight below 1
// discounts it again on top.

// LinkCost is the router's model of one lower tier's onboarding link.
// The zero value charges nothing (that tier's loads are free).
type LinkCost struct {
	// MsPerToken is the transfer time of one token's KV, in ms.
	MsPerToken float64 `yaml:"ms_per_token"`
	// MsPerBatch is the fixed cost of one load (setup, round trip), in ms.
	MsPerBatch float64 `yaml:"ms_per_batch"`
}

// TransferLink is the LinkCost of a link moving bytesPerSecond with a
// fixed latency per transfer, for KV of bytesPerToken bytes per token (an
// engine's link in the router's units).
func TransferLink(bytesPerToken, bytesPerSecond float64, latency time.Duration) LinkCost {
	return LinkCost{MsPerToken: bytesPerToken / bytesPerSecond * 1e3, MsPerBatch: float64(latency) / float64(time.Millisecond)}
}

// Time is the load time of tokens tokens over l, in ms; 0 for none.
func (l LinkCost) Time(tokens float64) float64 {
	if tokens <= 0 {
		return 0
	}
	return l.MsPerBatch + tokens*l.MsPerToken
}

// Onboard is the onboarding model of the lower tiers. The zero value is
// off: a lower-tier hit is priced by its credit alone.
type Onboard struct {
	// Host, Disk and Shared are the links of G2, G3 and the G4 store.
	// Default zero (off); DefaultOnboard gives the mocker's default links.
	Host   LinkCost `yaml:"host"`
	Disk   LinkCost `yaml:"disk"`
	Shared LinkCost `yaml:"shared"`
}

// Link returns the link of lower tier t (zero for the device).
func (o *Onboard) Link(t kvevents.Tier) LinkCost {
	switch t {
	case kvevents.TierHostPinned:
		return o.Host
	case kvevents.TierDisk:
		return o.Disk
	case kvevents.TierExternal:
		return o.Shared
	}
	return LinkCost{}
}

// IsZero reports whether o charges nothing.
func (o Onboard) IsZero() bool { return o == Onboard{} }

// Public figures behind DefaultOnboard (the mocker's default links,
// DESIGN.md §7): 128 KiB of KV per token (Llama-3-8B-like, fp16) over
// PCIe Gen4 x16 at 25 GB/s + 20 µs, an NVMe Gen4 SSD at 6 GB/s + 100 µs,
// and a 100 Gb/s network to the shared store at 12.5 GB/s + 1 ms.
const bytesPerToken = 2 * 32 * 8 * 128 * 2

// DefaultOnboard returns the onboarding model of the mocker's default
// links (see above): per 64-token block, host 0.34 ms, disk 1.4 ms,
// shared 0.67 ms (+1 ms per load), against ~1 ms of prefill per block
// at the margin (DESIGN.md §6).
func DefaultOnboard() Onboard {
	return Onboard{
		Host:   LinkCost{MsPerToken: bytesPerToken / 25e9 * 1e3, MsPerBatch: 0.02},
		Disk:   LinkCost{MsPerToken: bytesPerToken / 6e9 * 1e3, MsPerBatch: 0.1},
		Shared: LinkCost{MsPerToken: bytesPerToken / 12.5e9 * 1e3, MsPerBatch: 1},
	}
}

// Validate reports every problem with o.
func (o Onboard) Validate() error {
	var errs []error
	for t := kvevents.TierHostPinned; int(t) < kvevents.NumTiers; t++ {
		l := o.Link(t)
		for _, v := range []float64{l.MsPerToken, l.MsPerBatch} {
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				errs = append(errs, fmt.Errorf("selector: onboard link of %s: %v must be finite and >= 0", t, v))
			}
		}
	}
	return errors.Join(errs...)
}

// tierSegments splits the credited leading blocks by the tier crediting
// them (the best weight, ties to the faster tier), as tierCredit does:
// seg[t] blocks are credited at tier t's weight.
func tierSegments(ov *[kvevents.NumTiers]int, w *[kvevents.NumTiers]float64) (seg [kvevents.NumTiers]int) {
	prev := 0
	for {
		next := math.MaxInt
		for t := range kvevents.NumTiers {
			if ov[t] > prev {
				next = min(next, ov[t])
			}
		}
		if next == math.MaxInt {
			return seg
		}
		best, bt := 0.0, -1
		for t := range kvevents.NumTiers {
			if ov[t] >= next && w[t] > best {
				best, bt = w[t], t
			}
		}
		if bt >= 0 {
			seg[bt] += next - prev
		}
		prev = next
	}
}

// onboardTime is the load time of c's credited lower-tier blocks under
// cfg.Onboard, in ms (0 when the model is off or nothing loads).
func onboardTime(cfg *Config, c *Candidate, w *[kvevents.NumTiers]float64, b int) float64 {
	if cfg.Onboard.IsZero() {
		return 0
	}
	seg := tierSegments(&c.Overlap, w)
	load := 0.0
	for t := kvevents.TierHostPinned; int(t) < kvevents.NumTiers; t++ {
		if seg[t] == 0 {
			continue
		}
		l := cfg.Onboard.Link(t)
		load = max(load, max(0, c.LinkBacklog[t])+l.Time(float64(seg[t]*b)))
	}
	return load
}

// OnboardTimes returns, per lower tier, the load time in ms of the
// credited blocks that tier serves for a candidate with overlaps ov under
// cfg (backlog excluded): what the router books on the worker's links
// when it picks the candidate (CostTime with an onboarding model; zero
// otherwise).
func OnboardTimes(cfg *Config, ov *[kvevents.NumTiers]int, b int) (ms [kvevents.NumTiers]float64) {
	if cfg.Cost != CostTime || cfg.Onboard.IsZero() {
		return ms
	}
	w := [kvevents.NumTiers]float64{cfg.OverlapCredit, cfg.HostWeight, cfg.DiskWeight, cfg.SharedWeight}
	seg := tierSegments(ov, &w)
	for t := kvevents.TierHostPinned; int(t) < kvevents.NumTiers; t++ {
		if seg[t] > 0 {
			ms[t] = cfg.Onboard.Link(t).Time(float64(seg[t] * b))
		}
	}
	return ms
}

// TierCredits splits breakdown b's credit (computed under cfg) by the
// tier crediting each block: the entries add up to b.Credit. Per-request
// overrides of OverlapCredit are not reflected.
func TierCredits(cfg *Config, b *Breakdown) (credit [kvevents.NumTiers]float64) {
	w := [kvevents.NumTiers]float64{cfg.OverlapCredit * b.Decay, cfg.HostWeight, cfg.DiskWeight, cfg.SharedWeight}
	seg := tierSegments(&b.Overlap, &w)
	for t := range credit {
		credit[t] = float64(seg[t]) * w[t]
	}
	return credit
}
