package mocker

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Link is the transfer model of one tier boundary (DESIGN.md §7): a batch
// of n blocks occupies the link for Latency + n*BlockBytes/Bandwidth.
// Transfers on one link serialize; the offload (down) and onboarding (up)
// directions are separate links (PCIe and NVMe are full duplex enough for
// the model).
type Link struct {
	// Bandwidth is the effective bytes per second. Must be positive when
	// the tier is enabled.
	Bandwidth float64 `yaml:"bandwidth"`
	// Latency is the fixed cost per batch. Zero means none.
	Latency time.Duration `yaml:"latency"`
}

// Transfer is the link time of n blocks of blockBytes each.
func (l Link) Transfer(n int, blockBytes int64) time.Duration {
	if n <= 0 {
		return 0
	}
	s := float64(n) * float64(blockBytes) / l.Bandwidth
	return l.Latency + time.Duration(math.Round(s*float64(time.Second)))
}

// Public figures behind the default links (documented, not measured here):
// PCIe Gen4 x16 moves ~25 GB/s host<->device in practice (32 GB/s raw);
// a datacenter NVMe Gen4 SSD reads ~6 GB/s sequentially (5-7 GB/s across
// vendors); a 100 Gb/s network link to a shared KV pool ~12.5 GB/s.
var (
	// DefaultHostLink is G1<->G2 over PCIe Gen4 x16: 25 GB/s, 20 µs per
	// batch (DMA setup and synchronization).
	DefaultHostLink = Link{Bandwidth: 25e9, Latency: 20 * time.Microsecond}
	// DefaultDiskLink is G2/G1<->G3 on an NVMe Gen4 SSD: 6 GB/s, 100 µs per
	// batch (submission plus device latency).
	DefaultDiskLink = Link{Bandwidth: 6e9, Latency: 100 * time.Microsecond}
	// DefaultSharedLink is a worker<->G4 shared store over 100 Gb/s
	// networking: 12.5 GB/s, 1 ms per batch (request round trips).
	DefaultSharedLink = Link{Bandwidth: 12.5e9, Latency: time.Millisecond}
)

// DefaultBytesPerToken is the KV size of one token of a Llama-3-8B-like
// model in fp16: 2 (K and V) * 32 layers * 8 KV heads * 128 dims * 2 bytes.
const DefaultBytesPerToken = 2 * 32 * 8 * 128 * 2

// TierConfig configures the lower tiers of one engine (DESIGN.md §7). The
// zero value has no lower tier: the engine is G1 only, as before tiers.
type TierConfig struct {
	// HostBlocks is the G2 (pinned host memory) capacity in blocks. Zero
	// means no host tier. DefaultTiers uses 4 * NumBlocks.
	HostBlocks int `yaml:"host_blocks"`
	// DiskBlocks is the G3 (local disk) capacity in blocks. Zero means no
	// disk tier. DefaultTiers uses 16 * NumBlocks.
	DiskBlocks int `yaml:"disk_blocks"`
	// HostLink and DiskLink are the transfer models into G2 and G3 (and
	// back up to G1). Default DefaultHostLink and DefaultDiskLink; zero
	// bandwidth with the tier enabled is invalid.
	HostLink Link `yaml:"host_link"`
	DiskLink Link `yaml:"disk_link"`
	// Shared is the fleet's G4 store, shared by every engine that points
	// at it (the simulator builds one per fleet). Nil means no G4.
	Shared *SharedStore `yaml:"-"`
	// BlockBytes is the size of one block on the links. Default
	// DefaultBytesPerToken * BlockSize; zero means that default.
	BlockBytes int64 `yaml:"block_bytes"`
	// WriteThrough offloads every newly computed block; false (the
	// default) offloads a block when G1 evicts it (write-back).
	WriteThrough bool `yaml:"write_through"`
	// MinReuse is the policy screen: only blocks reused at least MinReuse
	// times (prefix hits in G1) are offloaded. Default 0 = every block.
	// With WriteThrough a block is screened when it is computed, before
	// any reuse, so only 0 lets blocks through.
	MinReuse int `yaml:"min_reuse"`
	// FlushBlocks flushes a batch that holds this many blocks. Default 8;
	// must be positive when a lower tier is enabled.
	FlushBlocks int `yaml:"flush_blocks"`
	// MaxBatch caps the blocks of one batch. Default 64; must be >=
	// FlushBlocks.
	MaxBatch int `yaml:"max_batch"`
	// FlushAfter flushes a batch this long after its first block joined.
	// Default 10ms; must be positive when a lower tier is enabled.
	FlushAfter time.Duration `yaml:"flush_after"`
}

// DefaultTiers returns G2 = 4x and G3 = 16x numBlocks with the default
// links, write-back, no screen, and the DESIGN.md §7 batcher.
func DefaultTiers(numBlocks int) TierConfig {
	t := TierConfig{HostBlocks: 4 * numBlocks, DiskBlocks: 16 * numBlocks}
	t.fillDefaults()
	return t
}

// fillDefaults sets the pipeline and link defaults where zero.
func (t *TierConfig) fillDefaults() {
	if t.HostLink == (Link{}) {
		t.HostLink = DefaultHostLink
	}
	if t.DiskLink == (Link{}) {
		t.DiskLink = DefaultDiskLink
	}
	if t.FlushBlocks == 0 {
		t.FlushBlocks = 8
	}
	if t.MaxBatch == 0 {
		t.MaxBatch = 64
	}
	if t.FlushAfter == 0 {
		t.FlushAfter = 10 * time.Millisecond
	}
}

// enabled reports whether any lower tier exists.
func (t *TierConfig) enabled() bool {
	return t.HostBlocks > 0 || t.DiskBlocks > 0 || t.Shared != nil
}

func (t *TierConfig) validate() error {
	var errs []error
	if t.HostBlocks < 0 || t.DiskBlocks < 0 {
		errs = append(errs, fmt.Errorf("mocker: tier capacities %d/%d must be >= 0", t.HostBlocks, t.DiskBlocks))
	}
	if t.BlockBytes < 0 || t.MinReuse < 0 {
		errs = append(errs, fmt.Errorf("mocker: block_bytes %d and min_reuse %d must be >= 0", t.BlockBytes, t.MinReuse))
	}
	if !t.enabled() {
		return errors.Join(errs...)
	}
	c := *t
	c.fillDefaults()
	if c.FlushBlocks <= 0 || c.MaxBatch < c.FlushBlocks || c.FlushAfter <= 0 {
		errs = append(errs, fmt.Errorf("mocker: batcher flush %d, cap %d, after %v: need 0 < flush <= cap and after > 0",
			c.FlushBlocks, c.MaxBatch, c.FlushAfter))
	}
	for _, l := range []Link{c.HostLink, c.DiskLink} {
		if !(l.Bandwidth > 0) || math.IsInf(l.Bandwidth, 0) || l.Latency < 0 {
			errs = append(errs, fmt.Errorf("mocker: link %+v needs a finite positive bandwidth and latency >= 0", l))
		}
	}
	return errors.Join(errs...)
}
