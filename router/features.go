package router

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kvrouter/kvrouter/selector"
)

// A feature is a live hypothesis about the cost, off by default and
// switched on by name (Config.EnableFeature; --enable-feature=a,b). Each
// changes decisions only when named; the terms measured and rejected are
// gone (docs/experiments/cost-terms.md has their figures).
const (
	// FeaturePassArrivals hands the selector the moment each prefill
	// pending on a rank came (loads.Tracker.PassArrivals as
	// selector.Candidate.PassQueue; time cost with the pass model): a
	// rolled pass takes only what came before it began, as the engine
	// schedules. Alone it passed 6 of 12 whole-trace verdicts (the
	// default 8); the tail guard's best figures were measured with it.
	FeaturePassArrivals = "pass-arrivals"
	// FeatureTailGuard keeps a running selector.TailQuantile of each
	// request's fastest predicted time to first token per hop
	// (selector.TailTracker) and has the time cost charge predicted time
	// above it selector.TailWeight times more, scaled by the share of it
	// the request's own idle prefill takes, squared (selector.Request.
	// TailTTFT). With pass-arrivals: 11 of 12 whole-trace verdicts (the
	// default 8), 10 of 12 on the first 4000 requests (the default 12).
	FeatureTailGuard = "tail-guard"
	// FeaturePeerKVHints attaches a selector.PeerHint to a decision when
	// another worker holds at least Config.PeerHints.MinBlocks more of the
	// prompt on its device than the chosen one and fetching them over the
	// KV link (Config.PeerHints.Link) is modeled faster than
	// computing them; the decision's prefill load then counts them as
	// cached (peerhint.go). Moving the request to the holder is the
	// selector's own choice of that candidate.
	FeaturePeerKVHints = "peer-kv-hints"
)

// FeatureInfo names a feature and says what it does, in a line.
type FeatureInfo struct {
	Name, Summary string
}

// Features lists every feature Config.EnableFeature accepts, in order.
func Features() []FeatureInfo {
	return []FeatureInfo{
		{FeaturePassArrivals, "time cost, pass model: a rolled pass takes only the prefill routed before it began"},
		{FeatureTailGuard, "time cost: charge predicted TTFT above the fleet's 98th percentile 10 times more, scaled by the request's own share of it"},
		{FeaturePeerKVHints, "hint the chosen worker to fetch the prompt blocks a peer holds over the KV link when that beats computing them"},
	}
}

// FeatureNames returns the names of Features.
func FeatureNames() []string {
	var names []string
	for _, f := range Features() {
		names = append(names, f.Name)
	}
	return names
}

// featureSet is Config.EnableFeature resolved (New).
type featureSet struct {
	passArrivals, tailGuard, peerHints bool
}

// EnabledFeatures returns the features names enable, each once, in the
// order of Features. An item may hold several names separated by commas
// (an environment variable's "a,b"); blanks are skipped. Unknown names
// are an error listing the known ones.
func EnabledFeatures(enable []string) ([]FeatureInfo, error) {
	var on []string
	var unknown []string
	known := FeatureNames()
	for _, item := range enable {
		for _, n := range strings.Split(item, ",") {
			n = strings.TrimSpace(n)
			switch {
			case n == "":
			case slices.Contains(known, n):
				on = append(on, n)
			default:
				unknown = append(unknown, fmt.Sprintf("%q", n))
			}
		}
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("router: unknown feature %s (known: %s)", strings.Join(unknown, ", "), strings.Join(known, ", "))
	}
	var out []FeatureInfo
	for _, f := range Features() {
		if slices.Contains(on, f.Name) {
			out = append(out, f)
		}
	}
	return out, nil
}

// features resolves cfg's features (Validate has checked the names).
// pass-arrivals needs the pass model; the tail guard, the time cost and
// a scoring policy (the estimate would follow no decision).
func features(cfg *Config) featureSet {
	var fs featureSet
	on, _ := EnabledFeatures(cfg.EnableFeature)
	for _, f := range on {
		switch f.Name {
		case FeaturePassArrivals:
			fs.passArrivals = cfg.Selector.PassModel
		case FeatureTailGuard:
			fs.tailGuard = cfg.Selector.Cost == selector.CostTime && !cfg.Policy.blind()
		case FeaturePeerKVHints:
			fs.peerHints = !cfg.Policy.blind()
		}
	}
	return fs
}
