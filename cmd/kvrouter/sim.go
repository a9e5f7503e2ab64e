package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// PLACEHOLDER: replaced wholesale by the work that builds this command.
func newSimCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "sim",
		Hidden: true,
		RunE:   func(*cobra.Command, []string) error { return errors.New("sim: not built yet") },
	}
}
