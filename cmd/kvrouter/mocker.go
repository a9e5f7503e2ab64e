package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// PLACEHOLDER: replaced wholesale by the work that builds this command.
func newMockerCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "mocker",
		Hidden: true,
		RunE:   func(*cobra.Command, []string) error { return errors.New("mocker: not built yet") },
	}
}
