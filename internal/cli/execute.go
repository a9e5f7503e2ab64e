package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

// Execute runs a binary's command tree under a context that the first
// SIGINT or SIGTERM cancels, and returns the process exit code: 0, or 1
// after printing the error prefixed with the root command's name.
func Execute(root *cobra.Command) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		// The first signal asks for a graceful stop; a second one, while a
		// start-up or a drain does not heed it, ends the process at once.
		<-ctx.Done()
		stop()
	}()
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(root.ErrOrStderr(), root.Name()+":", err)
		return 1
	}
	return 0
}
