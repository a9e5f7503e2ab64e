package cli

import (
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/kvrouter/kvrouter/router"
)

// BindCostKnobs binds the cost's switches beyond the common knobs, so
// that serve, epp and sim take them alike: the prefill floor and the
// live hypotheses (--enable-feature, router.Features). scope prefixes
// each help line ("router, " in sim, where the engine's knobs sit beside
// them).
func BindCostKnobs(f *pflag.FlagSet, rc *router.Config, scope string) {
	s := &rc.Selector
	f.BoolVar(&s.Unclamped, "unclamped", s.Unclamped, scope+"let overlap credit push the prefill term below zero")
	BindEnableFeature(f, rc, scope)
}

// BindEnableFeature binds --enable-feature to rc.EnableFeature and the
// features' knobs that matter enough for a flag: peer-kv-hints' lead
// (its link is YAML's peer_hints.link, or the engines' --kv-transfer-*
// where the command runs them).
func BindEnableFeature(f *pflag.FlagSet, rc *router.Config, scope string) {
	f.Var(&featureList{&rc.EnableFeature}, "enable-feature",
		scope+"experimental cost features to switch on, comma-separated or repeated (default none): "+strings.Join(router.FeatureNames(), ", "))
	f.IntVar(&rc.PeerHints.MinBlocks, "peer-hint-min-blocks", rc.PeerHints.MinBlocks,
		scope+"peer-kv-hints: least prompt blocks a peer must hold beyond the chosen worker for a hint to be priced")
}

// featureList is --enable-feature's value: names, comma-separated or
// repeated, each kept once. String gives them back comma-separated, so
// that setting a flag to its String (the presets re-apply flags so) is
// idempotent. The router refuses unknown names (router.Config.Validate).
type featureList struct{ p *[]string }

func (l *featureList) String() string { return strings.Join(*l.p, ",") }
func (l *featureList) Type() string   { return "strings" }

func (l *featureList) Set(v string) error {
	for _, n := range strings.Split(v, ",") {
		if err := l.Append(n); err != nil {
			return err
		}
	}
	return nil
}

// Append, Replace and GetSlice make it a pflag.SliceValue (app.Resolve:
// a flag's environment variable holds names separated by white space).
func (l *featureList) Append(n string) error {
	if n = strings.TrimSpace(n); n != "" && !slices.Contains(*l.p, n) {
		*l.p = append(*l.p, n)
	}
	return nil
}

func (l *featureList) Replace(ns []string) error {
	*l.p = nil
	for _, n := range ns {
		if err := l.Set(n); err != nil {
			return err
		}
	}
	return nil
}

func (l *featureList) GetSlice() []string { return slices.Clone(*l.p) }
