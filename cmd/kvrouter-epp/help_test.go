package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kvrouter/kvrouter/internal/clihelp"
)

// TestEPPSectionedHelp: kvrouter-epp's --help shows its sections, a footer
// with the environment mapping, and --help-all every flag
// (clihelp.Verify); a mistyped flag names the closest.
func TestEPPSectionedHelp(t *testing.T) {
	h := clihelp.Help{Sections: eppSections()}
	if err := h.Check(newEPPCmd()); err != nil {
		t.Error(err)
	}
	if err := clihelp.Verify(newEPPCmd, nil, h); err != nil {
		t.Error(err)
	}
	c := newEPPCmd()
	var out bytes.Buffer
	c.SetOut(&out)
	c.SetArgs([]string{"--help"})
	if err := c.Execute(); err != nil || !strings.Contains(out.String(), "(--grpc-addr: KVROUTER_GRPC_ADDR;") {
		t.Errorf("--help: %v\n%s", err, out.String())
	}
	c = newEPPCmd()
	c.SetOut(&bytes.Buffer{})
	c.SetErr(&bytes.Buffer{})
	c.SetArgs([]string{"--pool-selectr", "app=x"})
	if err := c.Execute(); err == nil || !strings.Contains(err.Error(), "(did you mean --pool-selector?)") {
		t.Errorf("mistyped flag: %v", err)
	}
}
