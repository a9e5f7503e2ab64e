package sim

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/router"
)

// policy is a routing policy as the event loop drives it. Request i is
// p.reqs[i]; workers are 0..W-1.
type policy interface {
	// route picks a worker for request i at now, or queues it (a later
	// release returns it), or fails it.
	route(p *prepared, i int, now time.Duration) (w int, queued bool, err error)
	// prefillDone: request i produced its first token.
	prefillDone(i int, now time.Duration)
	// free: request i finished (or could not be dispatched).
	free(i int, now time.Duration)
	// release returns queued requests that may now run.
	release(now time.Duration) []released
	// apply delivers KV events (only when wantsEvents).
	apply(evs []kvevents.Event)
	wantsEvents() bool
	// metrics reports worker w's KV usage (only when wantsMetrics).
	metrics(w int, usage float64)
	wantsMetrics() bool
}

type released struct {
	i, w int
	err  error
}

func newPolicy(p Policy, cfg *Config) (policy, error) {
	// Each policy gets its own stream from the one seed, so adding a
	// policy to the list never changes another's results.
	rng := func(stream uint64) *rand.Rand { return rand.New(rand.NewPCG(cfg.Seed, stream)) }
	if p == PolicyCacheAware {
		return newCacheAware(cfg.CacheAware, cfg.Workers, cfg.BlockSize, rng(6)), nil
	}
	if p == PolicyKVFullOnly {
		// kv's stream: on a model without groups the two decide alike.
		c := *cfg
		c.Router.Index.Groups.FullOnly = true
		return newRouterPolicy(&c, router.PolicyKV, rng(uint64(router.PolicyKV)+1))
	}
	rp, err := router.ParsePolicy(string(p))
	if err != nil {
		return nil, fmt.Errorf("%w %q", errNoPolicy, p)
	}
	// Streams 1-5 in router.Policy order (kv, approx, load, round-robin,
	// random): the streams each had before the baselines moved into the
	// router, so their figures do not change.
	return newRouterPolicy(cfg, rp, rng(uint64(rp)+1))
}

// epoch anchors simulated time for the router, which takes time.Time.
var epoch = time.Unix(1_700_000_000, 0).UTC()

// routerPolicy drives the real router core: every policy but
// cache-aware (round-robin and random are the router's too).
type routerPolicy struct {
	r      *router.Router
	mode   router.Policy
	queue  bool
	busyKV bool
	// out estimates output lengths (Router.TrackOutputBlocks without
	// Config.ExactOutput); nil routes with the trace's exact lengths.
	out *router.OutputAverage
	p   *prepared // the run's requests, for free's observations
	// keep keeps the last decision in last (Config.KeepRequests).
	keep bool
	last router.Decision
	// regret tallies the regret of a policy that credits overlap, kv
	// (and kv-full-only) or approx (regret.go); nil otherwise.
	regret *regretTally
	// peer holds the blocks of each routed request's peer-KV hint until
	// its dispatch (peerhint.go); nil until a hint comes.
	peer map[int]int
}

func (rp *routerPolicy) lastDecision() *router.Decision { return &rp.last }

// OutputWindow is the window of the output-length average the simulated
// router (and serve) estimates expected output from.
const OutputWindow = 100

func newRouterPolicy(cfg *Config, mode router.Policy, rng *rand.Rand) (*routerPolicy, error) {
	rc := cfg.Router
	rc.Policy = mode
	rc.BlockSize = cfg.BlockSize
	rc.TierChains = rc.TierChains || cfg.Tiers.Enabled()
	rc.PeerHints.Link = PeerLink(cfg.Engine, cfg.BlockSize)
	r, err := router.New(rc, router.Options{Rand: rng})
	if err != nil {
		return nil, err
	}
	for w := range cfg.Workers {
		err := r.AddWorker(router.WorkerInfo{
			ID:                  uint64(w),
			MaxNumBatchedTokens: cfg.Engine.MaxNumBatchedTokens,
			MaxNumSeqs:          cfg.Engine.MaxNumSeqs,
			TotalKVBlocks:       cfg.Engine.NumBlocks,
			BlockSize:           cfg.BlockSize,
			MaxLoRAs:            cfg.LoRA.MaxLoRAs,
			LoRAKnown:           cfg.LoRA.Enabled() && !cfg.LoRA.Blind,
		})
		if err != nil {
			return nil, err
		}
	}
	rp := &routerPolicy{r: r, mode: mode, queue: rc.Queue.Threshold > 0, busyKV: rc.Selector.BusyKVUsage > 0, keep: cfg.KeepRequests}
	if mode == router.PolicyKV || mode == router.PolicyApprox {
		rp.regret = newRegretTally(cfg.Workers)
	}
	if rc.TrackOutputBlocks && !cfg.ExactOutput {
		rp.out = router.NewOutputAverage(OutputWindow)
	}
	return rp, nil
}

func (rp *routerPolicy) route(p *prepared, i int, now time.Duration) (int, bool, error) {
	req := &p.reqs[i]
	rp.p = p
	out := req.rec.OutputLength
	if rp.out != nil {
		out = rp.out.Estimate("")
	}
	d, err := rp.r.Route(context.Background(), router.Request{
		ID:           req.id,
		Locals:       req.locals,
		ISL:          req.isl,
		OutputTokens: out,
		LoRA:         p.loraOf(i),
	}, epoch.Add(now))
	if err != nil {
		return 0, false, err
	}
	if rp.keep {
		rp.last = d
	}
	rp.notePeerHint(i, &d)
	if rp.regret != nil {
		rp.regret.size(len(p.reqs))
		rp.regret.routed(i, &d)
	}
	return int(d.Worker.ID), d.Queued, nil
}

func (rp *routerPolicy) prefillDone(i int, now time.Duration) {
	// NB: an unknown id can only mean the router dropped the request
	// (never in the simulator); ignore rather than abort the run.
	_ = rp.r.PrefillDone(strconv.Itoa(i), epoch.Add(now))
}

func (rp *routerPolicy) free(i int, now time.Duration) {
	_ = rp.r.Free(strconv.Itoa(i), epoch.Add(now))
	if rp.out != nil && rp.p != nil {
		rp.out.Observe("", rp.p.reqs[i].rec.OutputLength)
	}
}

func (rp *routerPolicy) release(now time.Duration) []released {
	if !rp.queue {
		return nil
	}
	rels := rp.r.Release(epoch.Add(now))
	out := make([]released, 0, len(rels))
	for _, rel := range rels {
		i, err := strconv.Atoi(rel.Decision.RequestID)
		if err != nil {
			continue // not ours; cannot happen
		}
		if rp.regret != nil && rel.Err == nil {
			rp.regret.routed(i, &rel.Decision)
		}
		if rel.Err == nil {
			rp.notePeerHint(i, &rel.Decision)
		}
		out = append(out, released{i: i, w: int(rel.Decision.Worker.ID), err: rel.Err})
	}
	return out
}

func (rp *routerPolicy) apply(evs []kvevents.Event) {
	for k := range evs {
		// A rejected event is counted by the router (Stats); the
		// simulation goes on, as a live router would.
		_ = rp.r.ApplyEvent(&evs[k])
		if rp.regret != nil {
			rp.regret.applied(&evs[k])
		}
	}
}

func (rp *routerPolicy) wantsEvents() bool { return rp.mode == router.PolicyKV }

func (rp *routerPolicy) metrics(w int, usage float64) {
	_ = rp.r.UpdateWorkerMetrics(kvevents.Worker{ID: uint64(w)}, router.Metrics{KVUsage: min(max(usage, 0), 1)})
}

func (rp *routerPolicy) wantsMetrics() bool { return rp.busyKV }
