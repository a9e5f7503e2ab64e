package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// PLACEHOLDER: replaced wholesale by the work that builds this command.
func newBenchFrontendCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "frontend",
		Hidden: true,
		RunE:   func(*cobra.Command, []string) error { return errors.New("benchfrontend: not built yet") },
	}
}
