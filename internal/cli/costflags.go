package cli

import (
	"github.com/spf13/pflag"

	"github.com/kvrouter/kvrouter/router"
)

// BindCostKnobs binds the time cost's optional terms (selector package
// doc: the pass model's refinements, the cache-value and tail terms, the
// routing history), each off by default, so that serve, up and epp take
// every knob sim measures. scope prefixes each help line ("router, " in
// sim, where the engine's knobs sit beside them).
func BindCostKnobs(f *pflag.FlagSet, rc *router.Config, scope string) {
	s := &rc.Selector
	f.BoolVar(&s.Unclamped, "unclamped", s.Unclamped, scope+"let overlap credit push the prefill term below zero")
	f.BoolVar(&s.ImposedOthers, "imposed-others", s.ImposedOthers, scope+"time cost: price the imposed term at U/(1-U), the delay to the requests behind it (false = 1/(1-U), its own service counted again)")
	f.BoolVar(&s.DelayOthers, "delay-others", s.DelayOthers, scope+"time cost, pass model: charge a request the time its prefill adds to the pass other pending requests wait for, once per such request (false = off)")
	f.Float64Var(&s.CacheValue, "cache-value", s.CacheValue, scope+"time cost: credit the prefill time a cache hit saves this many times more, over (1-U): the future value of reusing a prefix where it lives (0 = off)")
	f.BoolVar(&s.CacheExclusive, "cache-exclusive", s.CacheExclusive, scope+"time cost: --cache-value counts only the blocks of the hit no other worker holds")
	f.Float64Var(&s.TailWeight, "tail-weight", s.TailWeight, scope+"time cost: charge predicted time to first token above the fleet's tail (its --tail-quantile of each request's fastest prediction) this many times more, scaled by (the request's idle prefill time / that tail)^2, so a cache hit does not buy a long prompt a wait among the slowest requests (0 = off)")
	f.Float64Var(&s.TailQuantile, "tail-quantile", s.TailQuantile, scope+"time cost, with --tail-weight: the quantile of each request's fastest predicted time to first token taken as the fleet's tail (0 = 0.98)")
	f.BoolVar(&s.DecodePhase, "decode-phase", s.DecodePhase, scope+"time cost, pass model: prefill coming to a rank whose requests all decode waits for the decode pass in flight, half of one on average (false = roll from the last dated pass)")
	f.BoolVar(&s.PassArrivals, "pass-arrivals", s.PassArrivals, scope+"time cost, pass model: a rolled pass takes only the prefill routed before it began, by each request's routing moment (false = every token routed since the dated pass joins the next rolled pass)")
	f.BoolVar(&s.PassOverdue, "pass-overdue", s.PassOverdue, scope+"time cost, pass model: a first prefill pass that took every pending token is in flight until its first tokens come (false = roll on past its modeled end)")
	f.DurationVar(&rc.Predict.HistoryTTL, "history-ttl", rc.Predict.HistoryTTL, scope+"kv policy: how long the routing history keeps each decision's blocks (0 = off)")
	f.Float64Var(&s.HistoryWeight, "history-weight", s.HistoryWeight, scope+"kv policy: credit per block the routing history holds beyond what the events say (with --history-ttl)")
	f.Float64Var(&s.HistoryTie, "history-tie", s.HistoryTie, scope+"at temperature 0, among candidates within this relative cost of the best prefer the deepest held or history prefix (0 = off)")
}
