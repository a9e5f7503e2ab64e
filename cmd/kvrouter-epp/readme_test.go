package main

import (
	"path/filepath"
	"testing"

	"github.com/kvrouter/kvrouter/internal/clihelp"
)

// TestDocCommandsParse: every kvrouter-epp command line in a fenced block
// of README.md or a docs/ page (also as go run ./cmd/kvrouter-epp) parses
// with its flags.
func TestDocCommandsParse(t *testing.T) {
	if err := clihelp.CheckDocCommands(filepath.Join("..", ".."), newEPPCmd, 2); err != nil {
		t.Error(err)
	}
}
