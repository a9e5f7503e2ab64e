package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// PLACEHOLDER: replaced wholesale by the work that builds this command.
func newBenchEventsCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "events",
		Hidden: true,
		RunE:   func(*cobra.Command, []string) error { return errors.New("benchevents: not built yet") },
	}
}
