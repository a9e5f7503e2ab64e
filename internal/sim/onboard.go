package sim

import (
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
	perToken := bytesPerToken(tc, blockSize)
	cost := func(l mocker.Link) selector.LinkCost { return selector.TransferLink(perToken, l.Bandwidth, l.Latency) }
	return selector.Onboard{Host: cost(host), Disk: cost(disk), Shared: cost(mocker.DefaultSharedLink)}
}

// PeerLink is the link the router prices peer-KV hints over
// (router.Config.PeerHints.Link) for engines configured with eng and
// block size blockSize: the KV transfer link they pull a hint's blocks
// over (mocker.Config.KVTransfer; zero bandwidth is the mocker's default
// link, as the engine reads it).
func PeerLink(eng mocker.Config, blockSize int) selector.LinkCost {
	l := eng.KVTransfer
	if l.Bandwidth == 0 {
		l = mocker.Link{Bandwidth: mocker.DefaultKVTransferBandwidth, Latency: mocker.DefaultKVTransferLatency}
	}
	return selector.TransferLink(bytesPerToken(eng.Tiers, blockSize), l.Bandwidth, l.Latency)
}

// bytesPerToken is the KV bytes per token on an engine's links
// (tc.BlockBytes per block, or mocker.DefaultBytesPerToken).
func bytesPerToken(tc mocker.TierConfig, blockSize int) float64 {
	if tc.BlockBytes == 0 {
		return mocker.DefaultBytesPerToken
	}
	return float64(tc.BlockBytes) / float64(max(1, blockSize))
}
