package sim

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"text/tabwriter"
	"time"
)

// Report is the outcome of one Run: the bounds, then one PolicyReport per
// policy in Config.Policies order.
type Report struct {
	Requests  int     `json:"requests"`
	Workers   int     `json:"workers"`
	BlockSize int     `json:"block_size"`
	KVBlocks  int     `json:"kv_blocks_per_worker"`
	RateScale float64 `json:"rate_scale"`
	// OfferedRate is requests per second of simulated arrival time
	// (requests / arrival span).
	OfferedRate  float64 `json:"offered_rate_rps"`
	ArrivalSpanS float64 `json:"arrival_span_s"`
	EventDelayMS float64 `json:"event_delay_ms"`
	// Tiers are the lower tiers (mocker.ParseTierSizes syntax); "" = G1 only.
	Tiers string `json:"tiers,omitempty"`
	// Model is the engines' hybrid model (mocker.HybridConfig.Kind: swa
	// or mamba); "" = full attention only.
	Model string `json:"model,omitempty"`
	// LoRAAdapters and MaxLoRAs are Config.LoRA's (omitted without).
	LoRAAdapters int    `json:"lora_adapters,omitempty"`
	MaxLoRAs     int    `json:"max_loras,omitempty"`
	Seed         uint64 `json:"seed"`
	Bounds       Bounds `json:"bounds"`
	// Policies holds one report per policy, in Config.Policies order.
	Policies []PolicyReport `json:"policies"`
}

// Bounds are the block hit rates no router should beat by much, computed on
// the same requests in the same order (prompt full blocks only; a fully
// cached prompt still computes its last token, as the engines do).
type Bounds struct {
	// Blocks is the number of full prompt blocks over all requests.
	Blocks int64 `json:"blocks"`
	// InfiniteHits counts blocks seen before (an infinite cache).
	InfiniteHits    int64   `json:"infinite_hits"`
	InfiniteHitRate float64 `json:"infinite_hit_rate"`
	// PooledCapacity is the fleet's total KV blocks (Workers * NumBlocks);
	// PooledHits the prefix hits of one LRU cache that large.
	PooledCapacity int     `json:"pooled_capacity_blocks"`
	PooledHits     int64   `json:"pooled_hits"`
	PooledHitRate  float64 `json:"pooled_hit_rate"`
}

// Quantiles summarizes a latency distribution, in milliseconds.
type Quantiles struct {
	Mean float64 `json:"mean_ms"`
	P50  float64 `json:"p50_ms"`
	P90  float64 `json:"p90_ms"`
	P99  float64 `json:"p99_ms"`
	Max  float64 `json:"max_ms"`
}

// WorkerReport is one worker's share of a policy's work.
type WorkerReport struct {
	Requests       int   `json:"requests"`
	PromptTokens   int64 `json:"prompt_tokens"`
	CachedTokens   int64 `json:"cached_tokens"`
	ComputedTokens int64 `json:"computed_tokens"`
	Passes         int64 `json:"passes"`
	Preemptions    int64 `json:"preemptions"`
	// BusyS is the simulated time the engine spent in forward passes.
	BusyS float64 `json:"busy_s"`
	// LoRALoads counts the adapters loaded on this engine (Config.LoRA).
	LoRALoads int64 `json:"lora_loads,omitempty"`
}

// PolicyReport is one policy's figures.
type PolicyReport struct {
	Policy    Policy `json:"policy"`
	Completed int    `json:"completed"`
	// Rejected requests got a routing error (e.g. all workers over a busy
	// threshold with the queue off); they are not in any other figure.
	Rejected int `json:"rejected"`
	// Queued counts requests that waited in the router's queue (kv,
	// approx, load, round-robin and random with Router.Queue.Threshold > 0).
	Queued int       `json:"queued"`
	TTFT   Quantiles `json:"ttft"`
	// ITL is over every inter-token gap of every request.
	ITL Quantiles `json:"itl"`
	E2E Quantiles `json:"e2e"`
	// Prompt tokens: found in the engines' caches at admission vs
	// computed; recomputed after preemptions.
	PromptTokens     int64 `json:"prompt_tokens"`
	CachedTokens     int64 `json:"cached_tokens"`
	ComputedTokens   int64 `json:"computed_tokens"`
	RecomputedTokens int64 `json:"recomputed_tokens"`
	OutputTokens     int64 `json:"output_tokens"`
	// PeerHints counts requests dispatched with a peer-KV hint
	// (router.FeaturePeerKVHints); PeerPulledBlocks the prompt blocks their
	// engines pulled over the KV link (part of CachedTokens).
	PeerHints        int64 `json:"peer_hints,omitempty"`
	PeerPulledBlocks int64 `json:"peer_pulled_blocks,omitempty"`
	// LoRALoads counts adapters loaded into an engine slot (Config.LoRA;
	// lora.go): first use on a worker, or again after being unloaded.
	LoRALoads int64 `json:"lora_loads,omitempty"`
	// Block hit rate = HitBlocks / Blocks (full prompt blocks), and its
	// ratio to the two bounds.
	Blocks    int64   `json:"blocks"`
	HitBlocks int64   `json:"hit_blocks"`
	HitRate   float64 `json:"hit_rate"`
	// TierHitRate splits HitRate by the tier each hit block came from
	// (device, host, disk, shared); present only with lower tiers.
	TierHitRate  map[string]float64 `json:"tier_hit_rate,omitempty"`
	VsInfinite   float64            `json:"hit_rate_vs_infinite"`
	VsPooled     float64            `json:"hit_rate_vs_pooled"`
	Preemptions  int64              `json:"preemptions"`
	Passes       int64              `json:"passes"`
	MakespanS    float64            `json:"makespan_s"`
	RequestsPerS float64            `json:"throughput_rps"`
	OutputTokPS  float64            `json:"output_tokens_per_s"`
	// Imbalance is max/mean across workers (1 = perfectly even) of routed
	// requests and of computed prompt tokens.
	ImbalanceRequests float64 `json:"imbalance_requests"`
	ImbalancePrefill  float64 `json:"imbalance_prefill"`
	// BusyFraction is the mean fraction of the makespan the engines spent
	// in forward passes.
	BusyFraction float64        `json:"busy_fraction"`
	Workers      []WorkerReport `json:"workers"`
	// WallS is the wall time this policy's simulation took (not
	// deterministic).
	WallS float64 `json:"wall_s"`
	// TTFTSamples are every completed request's TTFT in ms, in request
	// order (Config.KeepSamples).
	TTFTSamples []float64 `json:"-"`
	// RequestRows are every completed request's prediction and outcome,
	// in completion order (Config.KeepRequests; dump.go).
	RequestRows []RequestRow `json:"-"`
	// Disagg splits a disaggregated variant's requests (Config.Disagg).
	Disagg *DisaggReport `json:"disagg,omitempty"`
	// Regret is the kv policy's lost prefix blocks by cause (regret.go;
	// not for disaggregated variants).
	Regret *RegretReport `json:"regret,omitempty"`
}

// Policy returns the report of p, or nil.
func (r *Report) Policy(p Policy) *PolicyReport {
	for i := range r.Policies {
		if r.Policies[i].Policy == p {
			return &r.Policies[i]
		}
	}
	return nil
}

// WriteTable prints the report as an aligned text table.
func (r *Report) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "requests=%d workers=%d block=%d kv_blocks=%d rate_scale=%g offered=%.3g req/s span=%.0fs event_delay=%gms seed=%d\n",
		r.Requests, r.Workers, r.BlockSize, r.KVBlocks, r.RateScale, r.OfferedRate, r.ArrivalSpanS, r.EventDelayMS, r.Seed)
	if r.Model != "" {
		fmt.Fprintf(w, "model: hybrid %s\n", r.Model)
	}
	if r.Tiers != "" {
		fmt.Fprintf(w, "tiers: %s\n", r.Tiers)
		for _, p := range r.Policies {
			fmt.Fprintf(w, "  %s hit rate by tier:", p.Policy)
			for _, n := range tierNames {
				fmt.Fprintf(w, " %s %.2f%%", n, 100*p.TierHitRate[n])
			}
			fmt.Fprintln(w)
		}
	}
	fmt.Fprintf(w, "bounds: infinite-cache hit rate %.2f%%, pooled-LRU (%d blocks) hit rate %.2f%% over %d prompt blocks\n\n",
		100*r.Bounds.InfiniteHitRate, r.Bounds.PooledCapacity, 100*r.Bounds.PooledHitRate, r.Bounds.Blocks)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "policy\tTTFT p50\tp90\tp99\tITL p50\tp99\tE2E p50\tp99\thit rate\t/inf\t/pooled\tcomputed Mtok\tcached Mtok\treq/s\tout tok/s\timb req\timb prefill\tpreempt\trejected\t")
	for _, p := range r.Policies {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.2f%%\t%.3f\t%.3f\t%.1f\t%.1f\t%.3f\t%.0f\t%.2f\t%.2f\t%d\t%d\t\n",
			p.Policy, ms(p.TTFT.P50), ms(p.TTFT.P90), ms(p.TTFT.P99), ms(p.ITL.P50), ms(p.ITL.P99),
			ms(p.E2E.P50), ms(p.E2E.P99), 100*p.HitRate, p.VsInfinite, p.VsPooled,
			float64(p.ComputedTokens)/1e6, float64(p.CachedTokens)/1e6, p.RequestsPerS, p.OutputTokPS,
			p.ImbalanceRequests, p.ImbalancePrefill, p.Preemptions, p.Rejected)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	r.writePredicted(w)
	return r.writeDisagg(w)
}

// ms formats milliseconds compactly (latencies span 1 ms to minutes).
func ms(v float64) string {
	switch {
	case v >= 10000:
		return strconv.FormatFloat(v/1000, 'f', 1, 64) + "s"
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64) + "ms"
	default:
		return strconv.FormatFloat(v, 'f', 1, 64) + "ms"
	}
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// CSVHeader is the header row of WriteCSV.
var CSVHeader = []string{
	"policy", "rate_scale", "offered_rps", "workers", "block_size", "requests", "completed", "rejected",
	"ttft_p50_ms", "ttft_p90_ms", "ttft_p99_ms", "ttft_mean_ms", "itl_p50_ms", "itl_p99_ms", "e2e_p50_ms", "e2e_p99_ms",
	"prompt_tokens", "cached_tokens", "computed_tokens", "recomputed_tokens", "output_tokens",
	"hit_rate", "infinite_hit_rate", "pooled_hit_rate", "hit_vs_infinite", "hit_vs_pooled",
	"throughput_rps", "output_tokens_per_s", "makespan_s", "imbalance_requests", "imbalance_prefill",
	"busy_fraction", "preemptions", "passes", "wall_s",
}

// WriteCSV writes one row per policy (with header when header is true).
func (r *Report) WriteCSV(w io.Writer, header bool) error {
	cw := csv.NewWriter(w)
	if header {
		if err := cw.Write(CSVHeader); err != nil {
			return err
		}
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 8, 64) }
	i := func(v int64) string { return strconv.FormatInt(v, 10) }
	for _, p := range r.Policies {
		row := []string{
			string(p.Policy), f(r.RateScale), f(r.OfferedRate), i(int64(r.Workers)), i(int64(r.BlockSize)), i(int64(r.Requests)),
			i(int64(p.Completed)), i(int64(p.Rejected)),
			f(p.TTFT.P50), f(p.TTFT.P90), f(p.TTFT.P99), f(p.TTFT.Mean), f(p.ITL.P50), f(p.ITL.P99), f(p.E2E.P50), f(p.E2E.P99),
			i(p.PromptTokens), i(p.CachedTokens), i(p.ComputedTokens), i(p.RecomputedTokens), i(p.OutputTokens),
			f(p.HitRate), f(r.Bounds.InfiniteHitRate), f(r.Bounds.PooledHitRate), f(p.VsInfinite), f(p.VsPooled),
			f(p.RequestsPerS), f(p.OutputTokPS), f(p.MakespanS), f(p.ImbalanceRequests), f(p.ImbalancePrefill),
			f(p.BusyFraction), i(p.Preemptions), i(p.Passes), f(p.WallS),
		}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// quantiles summarizes samples (ms); it sorts samples in place.
func quantiles(samples []float64) Quantiles {
	if len(samples) == 0 {
		return Quantiles{}
	}
	slices.Sort(samples)
	var sum float64
	for _, v := range samples {
		sum += v
	}
	return Quantiles{
		Mean: sum / float64(len(samples)),
		P50:  quantile(samples, 0.50),
		P90:  quantile(samples, 0.90),
		P99:  quantile(samples, 0.99),
		Max:  samples[len(samples)-1],
	}
}

// quantile is the nearest-rank q-quantile of sorted samples.
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	k := int(q*float64(len(sorted))+0.999999999) - 1
	return sorted[min(max(k, 0), len(sorted)-1)]
}

func toMS(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
