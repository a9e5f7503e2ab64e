package router

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/kvrouter/kvrouter/indexer"
	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/selector"
)

// Sentinel errors; test with errors.Is. selector.ErrNoneEligible and
// selector.ErrAllOverloaded come back from Route and Release too (the
// HTTP frontend answers them 503 and 529, ErrBadRequest 400).
var (
	ErrUnknownWorker  = errors.New("router: unknown worker")
	ErrUnknownRequest = errors.New("router: unknown request")
	ErrBlockSize      = errors.New("router: block size mismatch")
	ErrBadRequest     = errors.New("router: bad request")
	ErrBadWorker      = errors.New("router: bad worker info")
)

// Request is one request to route.
type Request struct {
	// ID names the request for its lifecycle calls (PrefillDone, Free...);
	// unique among active and queued requests. Required.
	ID string
	// Tokens is the prompt. The router cuts it into blocks of BlockSize and
	// hashes them (kvhash, salted by LoRA and Namespace).
	Tokens []uint32
	// Locals are precomputed local block hashes (already salted), used when
	// Tokens is nil (e.g. multimodal prompts hashed by the caller).
	Locals []uint64
	// ISL is the prompt length in tokens; 0 means len(Tokens), or
	// len(Locals)*BlockSize when only Locals are given.
	ISL int
	// LoRA is the adapter name ("" = base model); salts the hashes.
	LoRA string
	// Namespace is the cache namespace ("" = shared); salts the hashes.
	Namespace string
	// CacheSalt is vLLM's per-request cache_salt ("" = none): it salts the
	// first block's local hash (kvhash.SaltFirst), as vLLM salts only the
	// block at token 0, so prompts with different salts share no block.
	// Ignored when only Locals are given (the caller salts those).
	CacheSalt string
	// Priority orders the wait queue (queue package); higher is sooner.
	Priority float64
	// Tenant names the request's tenant or program for the fair queue
	// (QueueConfig.Fair; "" = no tenant, a tenant like any other).
	Tenant string
	// Session binds the request to a worker when affinity is on ("" = none).
	Session string
	// Constraints are hard placement rules (allow-list, pin, ranks, labels).
	Constraints selector.Constraints
	// Overrides replace the credit, prefill scale or temperature for this
	// request only.
	Overrides selector.Overrides
	// OutputTokens is the expected output length (optional; used when
	// Config.TrackOutputBlocks is on).
	OutputTokens int
	// Hop is the part of a disaggregated request this decision places
	// (DESIGN.md §10): only workers whose Role serves it are candidates.
	// Default HopAggregated.
	Hop Hop
	// Candidates, when its capacity holds every rank, receives
	// Decision.Candidates in place of memory cut from the router's slab,
	// so that a caller reusing one buffer routes without allocating. The
	// caller must not reuse it while the Decision is in use, nor before a
	// queued request comes back from Release. nil: the slab.
	Candidates []selector.Breakdown
	// Inputs, when set, receives the selector's inputs (a decision log
	// samples them for replay; inputs.go). nil: none, no copy.
	Inputs *Inputs
}

// Decision is where a request goes and why.
type Decision struct {
	RequestID string
	// Queued reports that the request is waiting in the queue: it has no
	// worker yet and will come back from Release.
	Queued bool
	// Worker is the chosen worker+rank.
	Worker kvevents.Worker
	// Overlap is the chosen worker's overlap per storage tier, in blocks:
	// device is its device prefix; host_pinned and disk the prefix it
	// holds in that tier (with Config.TierChains: in that tier or a faster
	// one, one chain across tiers, see tierview.go, so device <=
	// host_pinned <= disk once the worker sent lower-tier events);
	// external the fleet's G4 chain (0 unless Selector.SharedWeight > 0).
	Overlap [kvevents.NumTiers]int
	// Blocks is the number of full prompt blocks; ISL the prompt tokens.
	Blocks, ISL int
	// CachedTokens are the prompt tokens the worker already holds (the
	// deepest prefix in any credited tier, capped at ISL); PrefillTokens =
	// ISL - CachedTokens is what it must compute (its prefill load).
	CachedTokens, PrefillTokens int
	// NewBlocks are the decode blocks the request adds on the worker.
	NewBlocks int
	// Cost is the chosen candidate's cost.
	Cost float64
	// Affinity reports that the session binding chose the worker.
	Affinity bool
	// Waited reports that the request waited in the queue and Release
	// placed it (RegretOf's queue cause).
	Waited bool
	// Hop is the request's Hop; TransferBlocks (HopDecode) the full prompt
	// blocks the worker does not hold and receives by KV transfer.
	Hop            Hop
	TransferBlocks int
	// PeerHint, with the peer-kv-hints feature, names the peer to fetch
	// the leading PeerHint.Blocks prompt blocks from (peerhint.go); nil
	// when computing them is modeled no slower.
	PeerHint *selector.PeerHint
	// Candidates holds every worker+rank's cost breakdown or the reason it
	// was filtered out, sorted by worker.
	Candidates []selector.Breakdown
	// Inputs is Request.Inputs, filled (nil when the request set none).
	Inputs *Inputs
}

// String prints the decision and every candidate, one per line.
func (d *Decision) String() string {
	var b strings.Builder
	if d.Queued {
		fmt.Fprintf(&b, "%s: queued\n", d.RequestID)
		return b.String()
	}
	fmt.Fprintf(&b, "%s -> w%s cost=%.4g overlap=%d/%d/%d blocks=%d isl=%d cached=%d prefill=%d new=%d",
		d.RequestID, d.Worker, d.Cost, d.Overlap[kvevents.TierDevice], d.Overlap[kvevents.TierHostPinned],
		d.Overlap[kvevents.TierDisk], d.Blocks, d.ISL, d.CachedTokens, d.PrefillTokens, d.NewBlocks)
	if d.Affinity {
		b.WriteString(" affinity")
	}
	if d.Hop != HopAggregated {
		fmt.Fprintf(&b, " hop=%s", d.Hop)
		if d.Hop == HopDecode {
			fmt.Fprintf(&b, " transfer=%d", d.TransferBlocks)
		}
	}
	b.WriteByte('\n')
	for _, c := range d.Candidates {
		fmt.Fprintf(&b, "  %s\n", c)
	}
	return b.String()
}

// Released is one queued request that Release dispatched (Err nil) or
// failed (Err non-nil, e.g. selector.ErrNoneEligible).
type Released struct {
	Decision Decision
	Err      error
}

// MaxDPSize bounds WorkerInfo.DPSize: AddWorker refuses more ranks per
// worker (the largest data-parallel deployments have a few hundred).
const MaxDPSize = 1024

// MaxWorkerLoRAs bounds WorkerInfo.LoRAs: a worker reporting more loaded
// adapters is refused (engines load a handful; vLLM's --max-loras
// defaults to 1).
const MaxWorkerLoRAs = 1024

// WorkerInfo describes a worker (all its data-parallel ranks).
type WorkerInfo struct {
	ID uint64
	// DPSize is the number of data-parallel ranks, 0..DPSize-1; 0 means 1;
	// at most MaxDPSize.
	DPSize int
	// MaxNumBatchedTokens is the engine's token budget per step (busy
	// fraction and queue threshold); 0 = unknown.
	MaxNumBatchedTokens int
	// MaxNumSeqs is the engine's cap on running requests per rank (vLLM's
	// max_num_seqs): a request beyond it waits for a running one to end,
	// which the time cost charges from the gaps between the rank's
	// completions (finish.go, selector Config.PassModel). 0 = unknown.
	MaxNumSeqs int
	// TotalKVBlocks is the KV capacity per rank in blocks; when the worker
	// reports no KV usage, usage is estimated as active decode blocks /
	// TotalKVBlocks. 0 = unknown.
	TotalKVBlocks int
	// BlockSize must equal Config.BlockSize; 0 means "the router's".
	BlockSize int
	// Labels are matched by Constraints.Labels.
	Labels map[string]string
	// Role is the worker's part in disaggregated serving (DESIGN.md §10).
	// Default RoleBoth.
	Role Role
	// LoRAKnown says the worker reports its LoRA adapters: LoRAs are
	// those loaded (at most MaxWorkerLoRAs) and MaxLoRAs its adapter
	// slots (vLLM's --max-loras; 0 unbounded). A request for an adapter
	// pays its load on a worker without it, more on one with no free slot
	// (the cost's adapter term, selector lora.go); false counts the worker
	// as having a free slot. SetWorkerLoRAs updates LoRAs.
	LoRAKnown bool
	LoRAs     []string
	MaxLoRAs  int
}

// Metrics are what a worker rank reports about itself.
type Metrics struct {
	// KVUsage is the fraction of the rank's KV cache in use, in [0, 1].
	KVUsage float64
}

// Approx is the approximate side index the router needs in PolicyApprox
// (indexer.NewApprox satisfies it). It must be safe for concurrent use or
// be used by this router only (the router calls it under its lock).
type Approx interface {
	// Insert records that w received a request with these local hashes at
	// now (refreshing their TTL).
	Insert(w kvevents.Worker, locals []uint64, now time.Time)
	// FindMatches returns per-worker overlaps at now, ignoring expired
	// blocks.
	FindMatches(locals []uint64, now time.Time) indexer.Overlaps
	// RemoveWorker forgets every rank of worker id.
	RemoveWorker(id uint64)
}

// Events are optional callbacks (pebble style) for metrics, logs and tests.
// The router calls them after releasing its lock, on the caller's
// goroutine, so they may call back into the router; they must be cheap.
type Events struct {
	// OnRoute is called for every dispatched decision (from Route or
	// Release); req and d are valid during the call only.
	OnRoute func(req *Request, d *Decision)
	// OnQueue is called when a request starts waiting; pending is the
	// queue length after it joined.
	OnQueue func(req *Request, pending int)
	// OnReject is called when Route or Release fails a request.
	OnReject func(req *Request, err error)
	// OnSweep is called with the ids Sweep released as stale.
	OnSweep func(ids []string)
	// OnEvent is called after ApplyEvent (err nil when applied).
	OnEvent func(ev *kvevents.Event, err error)
	// OnBooking reports every change of this router's own load and
	// affinity state, for the other replicas of a routing tier (DESIGN.md
	// §9; they apply it with ApplyRemote): a dispatched decision
	// (BookRoute, then BookBind when affinity bound its session),
	// PrefillDone, and Free, Fail or Sweep of a routed request (BookFree).
	// Remote bookings are not reported again. b.Locals is valid during the
	// call only.
	OnBooking func(b Booking)
}

// AffinityStats is the session table's size against its bounds
// (AffinityConfig).
type AffinityStats struct {
	Sessions int
	// Bytes is what the bindings cost against AffinityConfig.MaxBytes.
	Bytes int64
	// Evicted counts bindings evicted for new ones beyond the bounds.
	Evicted uint64
}

// Stats is a snapshot of the router's counters.
type Stats struct {
	Workers        int // workers (not ranks)
	Ranks          int
	Active         int // requests routed and not yet freed
	Pending        int // requests waiting in the queue
	Sessions       int // affinity bindings
	Routed         uint64
	Queued         uint64
	Rejected       uint64
	Swept          uint64
	AffinityHits   uint64
	EventsApplied  uint64
	EventsRejected uint64
}
