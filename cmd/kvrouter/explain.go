package main

import (
	"github.com/spf13/cobra"

	"github.com/kvrouter/kvrouter/internal/decisionlog"
)

func newExplainCmd() *cobra.Command {
	var o decisionlog.Options
	c := &cobra.Command{
		Use:   "explain LOG (--request ID | --replay [--set JSON])",
		Short: "Explain or replay the routing decisions of a decision log",
		Long: `explain reads a decision log that serve wrote (--decision-log; docs/decision-log.md).
With --request ID it prints why that request's worker won: every candidate with its
overlap per tier, cost terms, probability and margin over the winner, or the filter
that excluded it. With --replay it scores every logged decision again with this
binary's selector and the logged configuration (--set changes knobs, a JSON object of
selector.Config fields) and reports the decisions whose choice or costs would change;
the exit status is 1 when a choice changed.`,
		Example: `  kvrouter explain decisions.jsonl --request chatcmpl-42
  kvrouter explain decisions.jsonl --replay --set '{"PrefillLoadScale":2}'`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return decisionlog.Run(cmd.OutOrStdout(), args[0], o)
		},
	}
	c.Flags().StringVar(&o.Request, "request", "", "explain this request id (the last decision logged for it)")
	c.Flags().BoolVar(&o.Replay, "replay", false, "replay every logged decision through this binary's selector")
	c.Flags().StringVar(&o.Set, "set", "", "with --replay: selector knobs to change, as JSON, e.g. {\"OverlapCredit\":0}")
	return c
}
