package cli

import "github.com/kvrouter/kvrouter/router"

// PresetRouter replaces the router's cost knobs (selector config and
// predicted side index) by the preset's (router.Preset). "" is a no-op.
func PresetRouter(rcfg *router.Config, name string) error {
	if name == "" {
		return nil
	}
	rc, err := router.Preset(name)
	if err != nil {
		return err
	}
	rcfg.Selector = rc.Selector
	rcfg.Predict = rc.Predict
	return nil
}
