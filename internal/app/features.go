package app

import (
	"log/slog"

	"github.com/kvrouter/kvrouter/router"
)

// LogFeatures logs, once at start, each experimental cost feature that
// enable switches on (router.EnabledFeatures: --enable-feature, YAML
// enable_feature, KVROUTER_ENABLE_FEATURE), so a run's logs say which
// model decided. Unknown names are an error listing the known ones.
func LogFeatures(log *slog.Logger, enable []string) error {
	on, err := router.EnabledFeatures(enable)
	if err != nil {
		return err
	}
	for _, f := range on {
		log.Info("feature enabled", "feature", f.Name, "what", f.Summary)
	}
	return nil
}
