package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// PLACEHOLDER: replaced wholesale by the work that builds this command.
func newServeCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "serve",
		Hidden: true,
		RunE:   func(*cobra.Command, []string) error { return errors.New("serve: not built yet") },
	}
}
