package main

import (
	"encoding/json"
	"io"
	"os"

	"github.com/kvrouter/kvrouter/internal/cli"
	"github.com/kvrouter/kvrouter/internal/clihelp"
	"github.com/spf13/cobra"
)

func main() { os.Exit(cli.Execute(newRootCmd())) }

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "kvrouter-study",
		Short:         "kvrouter's study tools: fleet simulator, trace replay, benchmarks, trace synthesis",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(clihelp.FlagError) // did-you-mean on every command
	root.AddCommand(
		newSimCmd(),
		newReplayCmd(),
		newBenchCmd(),
		newTraceCmd(),
	)
	return root
}

// newBenchCmd groups the benchmarks.
func newBenchCmd() *cobra.Command {
	c := &cobra.Command{Use: "bench", Short: "Benchmarks: index, event ingestion, frontend"}
	c.AddCommand(newBenchIndexCmd(), newBenchEventsCmd(), newBenchFrontendCmd())
	return c
}

// writeJSON prints v as indented JSON: the --json output of every report.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
