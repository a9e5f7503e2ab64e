package main

import (
	"os"

	"github.com/kvrouter/kvrouter/internal/cli"
	"github.com/kvrouter/kvrouter/internal/clihelp"
	"github.com/spf13/cobra"
)

func main() { os.Exit(cli.Execute(newRootCmd())) }

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
		newMockerCmd(),
		newServeCmd(),
		newUpCmd(),
		newBridgeCmd(),
		newExplainCmd(),
		// Commands now in kvrouter-study and kvrouter-epp.
		clihelp.Moved("sim", "kvrouter-study sim"),
		clihelp.Moved("replay", "kvrouter-study replay"),
		clihelp.Moved("bench", "kvrouter-study bench"),
		clihelp.Moved("trace", "kvrouter-study trace"),
		clihelp.Moved("epp", "kvrouter-epp"),
	)
	return root
}

// newEventsCmd groups the event tools.
func newEventsCmd() *cobra.Command {
	c := &cobra.Command{Use: "events", Short: "Decode and tail KV events"}
	c.AddCommand(newEventsDecodeCmd(), newEventsTailCmd())
	return c
}
