package sim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/kvrouter/kvrouter/mocker"
	"github.com/kvrouter/kvrouter/router"
	"github.com/kvrouter/kvrouter/trace"
)

// Disaggregated prefill and decode (DESIGN.md §10). With Config.Disagg the
// fleet's first Prefill workers have router.RolePrefill and the Decode
// others router.RoleDecode, and every router policy runs once per
// Disagg.Policies entry (a row "kv+isl"). A request the router disaggregates
// (router.Disaggregate) runs its prompt with one output token on the
// prefill worker the router picks over the prefill pool (Hold: the engine
// keeps its blocks); when that finishes, the prefill booking is freed and
// the decode hop is routed over the decode pool; the decode engine pulls
// the prompt's blocks over its KV link (mocker Request.RemoteBlocks),
// caches them (its Stored events reach the router like any others),
// computes the last tokens and decodes; when the pull lands the prefill
// engine releases the held blocks. Time to first token runs from the
// original arrival. A request run aggregated goes to the decode pool.

// DisaggConfig makes the simulated fleet disaggregated.
type DisaggConfig struct {
	// Pools are the pool sizes; their sum must equal Config.Workers.
	// Default zero: aggregated (every worker both).
	router.Pools
	// Policies are the conditional policies to compare, one report row
	// per router policy and entry. Default (empty):
	// Router.Disagg.Policy alone.
	Policies []router.DisaggPolicy
}

func (d DisaggConfig) validate(c *Config) error {
	if !d.Enabled() {
		return nil
	}
	var errs []error
	if d.Prefill < 1 || d.Decode < 1 || d.Prefill+d.Decode != c.Workers {
		errs = append(errs, fmt.Errorf("sim: disagg %d:%d needs two positive pools summing to workers %d", d.Prefill, d.Decode, c.Workers))
	}
	if c.Router.Queue.Threshold > 0 {
		errs = append(errs, errors.New("sim: disagg with the router's wait queue is not simulated"))
	}
	for _, p := range c.Policies {
		if p == PolicyCacheAware {
			errs = append(errs, errors.New("sim: disagg runs the router's policies only, not cache-aware"))
		}
	}
	return errors.Join(errs...)
}

// DisaggReport splits a disaggregated variant's requests and their time to
// first token.
type DisaggReport struct {
	// Disaggregated and Aggregated count the router's Disaggregate
	// decisions.
	Disaggregated int `json:"disaggregated"`
	Aggregated    int `json:"aggregated"`
	// PrefillHop is arrival to the end of the prefill hop (ms), DecodeHop
	// the end of the prefill hop to the first token (routing, the KV pull,
	// the first decode pass), over disaggregated requests.
	PrefillHop Quantiles `json:"prefill_hop"`
	DecodeHop  Quantiles `json:"decode_hop"`
	// Transfer is the part of DecodeHop the decode engine waited for its
	// KV pull (mocker Result.TransferTime), over disaggregated requests.
	Transfer Quantiles `json:"transfer"`
	// TransferredBlocks are the prompt blocks decode workers pulled.
	TransferredBlocks int64 `json:"transferred_blocks"`
}

// variant is one report row: a policy, disaggregated under a conditional
// policy or not.
type variant struct {
	pol    Policy
	disagg *router.DisaggPolicy
}

func (v variant) name() Policy {
	if v.disagg == nil {
		return v.pol
	}
	return Policy(string(v.pol) + "+" + v.disagg.String())
}

// variants lists the report rows of cfg.
func variants(cfg *Config) []variant {
	var out []variant
	for _, pol := range cfg.Policies {
		if !cfg.Disagg.Enabled() {
			out = append(out, variant{pol: pol})
			continue
		}
		dps := cfg.Disagg.Policies
		if len(dps) == 0 {
			dps = []router.DisaggPolicy{cfg.Router.Disagg.Policy}
		}
		for _, dp := range dps {
			out = append(out, variant{pol: pol, disagg: &dp})
		}
	}
	return out
}

// hop phases of a request in a disaggregated fleet.
const (
	phaseNone    uint8 = iota // aggregated, or not arrived
	phasePrefill              // prefill hop running or holding on prefillW
	phaseDecode               // decode hop on a decode worker
)

type hopState struct {
	phase      uint8
	prefillW   int32
	prefillEnd time.Duration
	// The prefill hop's prompt split: found in its engine's cache vs
	// computed there.
	cached, computed int32
}

// finished records finished request r's KV pull and returns its prompt
// tokens found cached vs computed: for a disaggregated request, its prefill
// hop's hit and computation plus what the decode hop computed (its pulled
// blocks are neither: Report.Disagg counts them).
func (ds *disaggSim) finished(r *mocker.Result) (cached, computed int) {
	h := &ds.hops[r.ID]
	if h.phase != phaseDecode {
		return r.CachedTokens, r.ComputedTokens
	}
	ds.transferMS = append(ds.transferMS, toMS(r.TransferTime))
	return int(h.cached), int(h.computed) + r.ComputedTokens
}

// disaggSim is a disaggregated variant's state.
type disaggSim struct {
	rp         *routerPolicy
	hops       []hopState
	prefillMS  []float64
	decodeMS   []float64
	transferMS []float64
	rep        DisaggReport
	prefillIDs []string // "i/p", built once
}

// startDisagg gives the router the workers' roles.
func (f *fleet) startDisagg() error {
	rp, ok := f.pol.(*routerPolicy)
	if !ok {
		return fmt.Errorf("sim: disagg needs a router policy, not %s", f.rep.Policy)
	}
	for w := range f.cfg.Workers {
		role := router.RoleDecode
		if w < f.cfg.Disagg.Prefill {
			role = router.RolePrefill
		}
		err := rp.r.AddWorker(router.WorkerInfo{ID: uint64(w), MaxNumBatchedTokens: f.cfg.Engine.MaxNumBatchedTokens,
			TotalKVBlocks: f.cfg.Engine.NumBlocks, BlockSize: f.cfg.BlockSize, Role: role})
		if err != nil {
			return err
		}
	}
	f.dis = &disaggSim{rp: rp, hops: make([]hopState, len(f.p.reqs)), prefillIDs: make([]string, len(f.p.reqs))}
	return nil
}

// routeHop routes hop h of request i at now.
func (rp *routerPolicy) routeHop(ds *disaggSim, p *prepared, i int, now time.Duration, h router.Hop) (int, error) {
	req := &p.reqs[i]
	rp.p = p
	out := req.rec.OutputLength
	if rp.out != nil {
		out = rp.out.Estimate("")
	}
	id := req.id
	if h == router.HopPrefill {
		id = ds.prefillID(i)
	}
	d, err := rp.r.Route(context.Background(), router.Request{ID: id, Locals: req.locals, ISL: req.isl, OutputTokens: out, Hop: h},
		epoch.Add(now))
	if err != nil {
		return 0, err
	}
	return int(d.Worker.ID), nil
}

func (ds *disaggSim) prefillID(i int) string {
	if ds.prefillIDs[i] == "" {
		ds.prefillIDs[i] = strconv.Itoa(i) + "/p"
	}
	return ds.prefillIDs[i]
}

// arriveDisagg decides and routes request i's first hop.
func (f *fleet) arriveDisagg(i int) {
	ds := f.dis
	req := &f.p.reqs[i]
	rr := router.Request{ID: req.id, Locals: req.locals, ISL: req.isl}
	pl, err := ds.rp.r.Disaggregate(&rr, epoch.Add(f.now))
	if err != nil {
		f.reject()
		return
	}
	if !pl.Disaggregate {
		ds.rep.Aggregated++
		w, err := ds.rp.routeHop(ds, f.p, i, f.now, router.HopAggregated)
		if err != nil {
			f.reject()
			return
		}
		f.dispatch(i, w)
		return
	}
	ds.rep.Disaggregated++
	w, err := ds.rp.routeHop(ds, f.p, i, f.now, router.HopPrefill)
	if err != nil {
		f.reject()
		return
	}
	tok := trace.Tokens(f.getTokens(req.isl), req.rec, trace.TraceBlockTokens)
	err = f.ws[w].eng.Add(mocker.Request{ID: uint64(i), Tokens: tok, MaxOutputTokens: 1, Arrival: req.arrival, Hold: true})
	if err != nil {
		f.putTokens(tok)
		_ = ds.rp.r.Free(ds.prefillID(i), epoch.Add(f.now))
		f.reject()
		return
	}
	f.toks[i] = tok
	ds.hops[i] = hopState{phase: phasePrefill, prefillW: int32(w)}
	f.ws[w].stats.Requests++
	if !f.ws[w].inPass {
		f.startPass(w)
	}
}

// prefillHop reports whether request i's output on worker w is its
// prefill hop's.
func (f *fleet) prefillHop(i, w int) bool {
	h := &f.dis.hops[i]
	return h.phase == phasePrefill && int(h.prefillW) == w
}

// prefillFinished ends request i's prefill hop: its prefill load leaves,
// and the decode hop is routed and dispatched with the prompt's blocks
// remote.
func (f *fleet) prefillFinished(i, pw int, fr *mocker.Result) {
	ds := f.dis
	h := &ds.hops[i]
	req := &f.p.reqs[i]
	h.cached, h.computed = int32(fr.CachedTokens), int32(fr.ComputedTokens)
	ws := &f.ws[pw].stats
	ws.PromptTokens += int64(fr.PromptTokens)
	ws.CachedTokens += int64(fr.CachedTokens)
	ws.ComputedTokens += int64(fr.ComputedTokens)
	ws.Preemptions += int64(fr.Preemptions)
	_ = ds.rp.r.Free(ds.prefillID(i), epoch.Add(f.now))
	h.phase, h.prefillEnd = phaseDecode, f.now
	ds.prefillMS = append(ds.prefillMS, toMS(f.now-req.arrival))
	w, err := ds.rp.routeHop(ds, f.p, i, f.now, router.HopDecode)
	if err == nil {
		err = f.ws[w].eng.Add(mocker.Request{ID: uint64(i), Tokens: f.toks[i], MaxOutputTokens: max(1, req.rec.OutputLength),
			Arrival: req.arrival, RemoteBlocks: len(req.locals)})
		if err != nil {
			_ = ds.rp.r.Free(req.id, epoch.Add(f.now))
		}
	}
	if err != nil {
		f.ws[h.prefillW].eng.Release(uint64(i))
		f.putTokens(f.toks[i])
		f.toks[i] = nil
		h.phase = phaseNone
		f.reject()
		return
	}
	f.ws[w].stats.Requests++
	if !f.ws[w].inPass {
		f.startPass(w)
	}
}

// pulled releases the blocks request i's prefill worker held for the pull
// that just landed.
func (f *fleet) pulled(i int) {
	if f.dis == nil {
		return
	}
	pw := int(f.dis.hops[i].prefillW)
	if f.ws[pw].eng.Release(uint64(i)) && !f.ws[pw].inPass && f.ws[pw].eng.Busy() {
		f.startPass(pw) // the freed blocks may admit a waiting request
	}
}

// firstToken records the decode hop's share of request i's TTFT.
func (f *fleet) firstToken(i int) {
	if f.dis == nil {
		return
	}
	if h := &f.dis.hops[i]; h.phase == phaseDecode {
		f.dis.decodeMS = append(f.dis.decodeMS, toMS(f.now-h.prefillEnd))
	}
}

func (f *fleet) finishDisagg() {
	if f.dis == nil {
		return
	}
	ds := f.dis
	ds.rep.PrefillHop = quantiles(ds.prefillMS)
	ds.rep.DecodeHop = quantiles(ds.decodeMS)
	ds.rep.Transfer = quantiles(ds.transferMS)
	ds.rep.TransferredBlocks = f.transferred
	f.rep.Disagg = &ds.rep
}

// writeDisagg writes the disaggregated rows' split (nothing without any).
func (r *Report) writeDisagg(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	header := false
	for _, p := range r.Policies {
		d := p.Disagg
		if d == nil {
			continue
		}
		if !header {
			fmt.Fprintln(w)
			fmt.Fprintln(tw, "policy\tdisaggregated\taggregated\tprefill hop p50\tp99\ttransfer p50\tp99\tdecode hop p50\tp99\ttransferred blocks\t")
			header = true
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t\n", p.Policy, d.Disaggregated, d.Aggregated,
			ms(d.PrefillHop.P50), ms(d.PrefillHop.P99), ms(d.Transfer.P50), ms(d.Transfer.P99),
			ms(d.DecodeHop.P50), ms(d.DecodeHop.P99), d.TransferredBlocks)
	}
	return tw.Flush()
}
