package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/kvrouter/kvrouter/internal/clihelp"
	"github.com/spf13/cobra"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		// The first signal asks for a graceful stop; a second one, while a
		// start-up or a drain does not heed it, ends the process at once.
		<-ctx.Done()
		stop()
	}()
	if err := newRootCmd().ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "kvrouter:", err)
		os.Exit(1)
	}
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "kvrouter",
		Short:         "KV-cache-aware router for LLM inference fleets",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(clihelp.FlagError) // did-you-mean on every command
	root.AddCommand(
		newHashCmd(),
		newEventsCmd(),
		newBenchCmd(),
		newSimCmd(),
		newTraceCmd(),
		newMockerCmd(),
		newServeCmd(),
		newEPPCmd(),
		newUpCmd(),
		newReplayCmd(),
		newBridgeCmd(),
	)
	return root
}

// newEventsCmd groups the event tools.
func newEventsCmd() *cobra.Command {
	c := &cobra.Command{Use: "events", Short: "Decode and tail KV events"}
	c.AddCommand(newEventsDecodeCmd(), newEventsTailCmd())
	return c
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
