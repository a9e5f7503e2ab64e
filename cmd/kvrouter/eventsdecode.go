package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// PLACEHOLDER: replaced wholesale by the work that builds this command.
func newEventsDecodeCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "decode",
		Hidden: true,
		RunE:   func(*cobra.Command, []string) error { return errors.New("eventsdecode: not built yet") },
	}
}
