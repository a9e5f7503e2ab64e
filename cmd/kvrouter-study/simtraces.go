package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kvrouter/kvrouter/internal/cli"
	"github.com/kvrouter/kvrouter/internal/sim"
	"github.com/kvrouter/kvrouter/router"
)

// applySimPreset applies a router preset to the simulated policies.
func applySimPreset(cmd *cobra.Command, cfg *sim.Config, name string) error {
	return applyRouterPreset(cmd, &cfg.Router, name)
}

// applyRouterPreset replaces the router's cost knobs (selector config and
// predicted side index) by the preset's (router.Preset), then re-applies
// every flag given explicitly: flags override the preset. "" is a no-op.
func applyRouterPreset(cmd *cobra.Command, rcfg *router.Config, name string) error {
	if name == "" {
		return nil
	}
	changed := map[string]string{}
	cmd.Flags().Visit(func(f *pflag.Flag) { changed[f.Name] = f.Value.String() })
	if err := cli.PresetRouter(rcfg, name); err != nil {
		return err
	}
	for n, v := range changed {
		if err := cmd.Flags().Set(n, v); err != nil {
			return fmt.Errorf("--%s: %w", n, err)
		}
	}
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
