package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// PLACEHOLDER: replaced wholesale by the work that builds this command.
func newReplayCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "replay",
		Hidden: true,
		RunE:   func(*cobra.Command, []string) error { return errors.New("replay: not built yet") },
	}
}
