package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// PLACEHOLDER: replaced wholesale by the work that builds this command.
func newUpCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "up",
		Hidden: true,
		RunE:   func(*cobra.Command, []string) error { return errors.New("up: not built yet") },
	}
}
