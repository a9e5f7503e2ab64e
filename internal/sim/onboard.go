package sim

import (
	"time"

	"github.com/kvrouter/kvrouter/mocker"
	"github.com/kvrouter/kvrouter/selector"
)

// OnboardModel is the router's onboarding model (selector.Onboard) of
// engines configured with tc and block size blockSize: the same links and
// block bytes the simulated engines load over (DESIGN.md §7), so the
// router prices a lower-tier hit by the transfer the engine will make.
func OnboardModel(tc mocker.TierConfig, blockSize int) selector.Onboard {
	def := mocker.DefaultTiers(0)
	host, disk := tc.HostLink, tc.DiskLink
	if host == (mocker.Link{}) {
		host = def.HostLink
	}
	if disk == (mocker.Link{}) {
		disk = def.DiskLink
	}
	bytes := float64(tc.BlockBytes)
	if bytes == 0 {
		bytes = float64(mocker.DefaultBytesPerToken) * float64(blockSize)
	}
	perToken := bytes / float64(max(1, blockSize))
	cost := func(l mocker.Link) selector.LinkCost {
		return selector.LinkCost{MsPerToken: perToken / l.Bandwidth * 1e3, MsPerBatch: float64(l.Latency) / float64(time.Millisecond)}
	}
	return selector.Onboard{Host: cost(host), Disk: cost(disk), Shared: cost(mocker.DefaultSharedLink)}
}
