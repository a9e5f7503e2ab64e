package cli

import (
	"github.com/spf13/pflag"

	"github.com/kvrouter/kvrouter/mocker"
)

// modelKindFlag is a string flag over mocker.HybridConfig.Kind in the
// command lines' spelling: full, hybrid-swa, hybrid-mamba.
type modelKindFlag struct{ p *mocker.HybridKind }

func (f modelKindFlag) String() string {
	if f.p == nil || *f.p == mocker.HybridNone {
		return "full"
	}
	return "hybrid-" + string(*f.p)
}

func (f modelKindFlag) Set(s string) error {
	k, err := mocker.ParseHybridKind(s)
	if err != nil {
		return err
	}
	*f.p = k
	return nil
}

func (modelKindFlag) Type() string { return "string" }

// ModelKindUsage is --model-kind's help text.
const ModelKindUsage = "engine model (DESIGN.md §13): full, hybrid-swa (a sliding-window group, window 128 tokens as gpt-oss) or " +
	"hybrid-mamba (a recurrent-state group, Nemotron-H-like); a hybrid engine reuses (and reports as cached) the joint hit of its groups"

// BindModelKind binds --model-kind to the engine's hybrid kind (its other
// knobs, window, state_interval and group_fraction, are the config file's
// engine.hybrid).
func BindModelKind(fs *pflag.FlagSet, e *mocker.Config) {
	fs.Var(modelKindFlag{&e.Hybrid.Kind}, "model-kind", ModelKindUsage)
}
