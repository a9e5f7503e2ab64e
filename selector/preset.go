package selector

import (
	"fmt"
	"strings"
)

// Preset names.
const (
	// PresetDefault is kvrouter's default: DefaultConfig.
	PresetDefault = "default"
	// PresetDynamo is NVIDIA Dynamo's KV router cost with its defaults
	// (DESIGN.md §4): CostBlocks, overlap credit 1, prefill load scale 1,
	// tier weights 0.75 / 0.25, no decay, clamped prefill, active-request
	// weight 0, temperature 0. A fleet migrating from Dynamo gets the same
	// decisions; requests naming a LoRA adapter keep the default adapter
	// term (lora.go), in blocks.
	PresetDynamo = "dynamo"
)

// Presets lists the preset names Preset accepts.
var Presets = []string{PresetDefault, PresetDynamo}

// Preset returns the configuration a preset names ("" means
// PresetDefault). Busy thresholds are off in every preset.
func Preset(name string) (Config, error) {
	switch name {
	case "", PresetDefault:
		return DefaultConfig(), nil
	case PresetDynamo:
		return Config{
			Cost:             CostBlocks,
			Timing:           DefaultTiming(),
			OverlapCredit:    1.0,
			PrefillLoadScale: 1.0,
			HostWeight:       0.75,
			DiskWeight:       0.25,
			LoRALoad:         DefaultLoRALoad,
			LoRAEvict:        DefaultLoRALoad,
		}, nil
	}
	return Config{}, fmt.Errorf("selector: unknown preset %q (want %s)", name, strings.Join(Presets, " or "))
}
