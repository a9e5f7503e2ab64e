package clihelp

import (
	"fmt"

	"github.com/spf13/cobra"
)

// Moved is a hidden command standing where a command used to be, so that
// an old command line is told where it went instead of "unknown command":
// `kvrouter sim` answers that sim is now `kvrouter-study sim`. now is the
// new command line's head ("kvrouter-study sim", "kvrouter-epp").
func Moved(name, now string) *cobra.Command {
	return &cobra.Command{
		Use:                name,
		Hidden:             true,
		DisableFlagParsing: true,
		Args:               cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return fmt.Errorf("%s %s is now %s, a binary of its own (go run ./cmd/%s)", c.Root().Name(), name, now, binary(now))
		},
	}
}

// binary is the first word of a command line.
func binary(line string) string {
	for i, r := range line {
		if r == ' ' {
			return line[:i]
		}
	}
	return line
}
