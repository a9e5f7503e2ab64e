package cli

import (
	"github.com/spf13/pflag"

	"github.com/kvrouter/kvrouter/internal/decisionlog"
)

// BindDecisionLog binds the decision log's flags (docs/decision-log.md).
func BindDecisionLog(f *pflag.FlagSet, c *decisionlog.Config) {
	f.StringVar(&c.Path, "decision-log", c.Path, "append sampled routing decisions (payload-free JSON lines, every candidate's cost terms) to this file for kvrouter explain (\"\" = off)")
	f.IntVar(&c.Sample, "decision-log-sample", c.Sample, "log one routing decision in N (0 = 1: all)")
	f.Int64Var(&c.MaxBytes, "decision-log-max-bytes", c.MaxBytes, "stop the decision log at this file size (0 = 64 MiB)")
	f.IntVar(&c.Rate, "decision-log-rate", c.Rate, "most decisions logged per second (0 = 100)")
}
