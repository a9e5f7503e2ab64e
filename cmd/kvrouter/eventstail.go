package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// PLACEHOLDER: replaced wholesale by the work that builds this command.
func newEventsTailCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "tail",
		Hidden: true,
		RunE:   func(*cobra.Command, []string) error { return errors.New("eventstail: not built yet") },
	}
}
