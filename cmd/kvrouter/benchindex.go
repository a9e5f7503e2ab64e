package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// PLACEHOLDER: replaced wholesale by the work that builds this command.
func newBenchIndexCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "index",
		Hidden: true,
		RunE:   func(*cobra.Command, []string) error { return errors.New("benchindex: not built yet") },
	}
}
