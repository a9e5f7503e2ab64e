package selector

import (
	"math"
	"testing"

	"github.com/kvrouter/kvrouter/kvevents"
)

// TestTierSegments: each leading block goes to the tier crediting it (the
// best weight, ties to the faster tier), and the segments add up to the
// deepest credited overlap.
func TestTierSegments(t *testing.T) {
	for _, tc := range []struct {
		ov, want [kvevents.NumTiers]int
		w        [kvevents.NumTiers]float64
	}{
		{ov: [4]int{4, 8, 10, 0}, w: [4]float64{1, 0.75, 0.25, 0}, want: [4]int{4, 4, 2, 0}},
		{ov: [4]int{4, 8, 10, 0}, w: [4]float64{1, 1, 1, 0}, want: [4]int{4, 4, 2, 0}},
		// A decayed device credit below the host weight: the host serves
		// the device's blocks too (tierCredit credits them at 0.75).
		{ov: [4]int{4, 8, 10, 0}, w: [4]float64{0.5, 0.75, 0.25, 0}, want: [4]int{0, 8, 2, 0}},
		// Zero weight: the disk's blocks earn nothing and load nothing.
		{ov: [4]int{0, 0, 10, 12}, w: [4]float64{1, 0.75, 0, 0.5}, want: [4]int{0, 0, 0, 12}},
	} {
		if got := tierSegments(&tc.ov, &tc.w); got != tc.want {
			t.Errorf("tierSegments(%v, %v) = %v, want %v", tc.ov, tc.w, got, tc.want)
		}
	}
}

// TestOnboardCost: with the model off the time cost is unchanged; with it
// on, the prefill waits for max(queue ahead, slowest tier's load incl. its
// link backlog), and every other term is as without the model.
func TestOnboardCost(t *testing.T) {
	const B = 64
	cfg := DefaultConfig()
	cfg.HostWeight, cfg.DiskWeight = 1, 1
	c := Candidate{Worker: kvevents.Worker{ID: 1}, MaxNumBatchedTokens: 8192, TotalKVBlocks: 1000,
		Overlap: [kvevents.NumTiers]int{2, 10, 30, 0}, ActivePrefillTokens: 512, ActiveRequests: 1, PrefillRequests: 1}
	off := Cost(cfg, 40*B, B, 0, 0.3, &c)
	if off.Onboard != 0 {
		t.Fatalf("model off: onboard = %v", off.Onboard)
	}
	cfg.Onboard = DefaultOnboard()
	on := Cost(cfg, 40*B, B, 0, 0.3, &c)
	host := cfg.Onboard.Host.Time(8 * B)
	disk := cfg.Onboard.Disk.Time(20 * B)
	if want := max(host, disk); math.Abs(on.Onboard-want) > 1e-9 {
		t.Fatalf("onboard = %v, want max(host %v, disk %v)", on.Onboard, host, disk)
	}
	tm := DefaultTiming()
	ahead, _ := tm.PrefillSpan(512, 8192)
	mine, _ := tm.PrefillSpan(10*B, 8192)
	if want := max(ahead, on.Onboard) + mine; math.Abs(on.Prefill-want) > 1e-9 {
		t.Fatalf("prefill = %v, want max(%v, %v) + %v", on.Prefill, ahead, on.Onboard, mine)
	}
	if on.Prefill < off.Prefill || on.Credit != off.Credit || on.Imposed != off.Imposed || on.Decode != off.Decode {
		t.Fatalf("model on changed more than the wait: off %s, on %s", off, on)
	}
	c.LinkBacklog[kvevents.TierHostPinned] = 500
	bl := Cost(cfg, 40*B, B, 0, 0.3, &c)
	if want := 500 + host; math.Abs(bl.Onboard-want) > 1e-9 {
		t.Fatalf("with host backlog: onboard = %v, want %v", bl.Onboard, want)
	}
	cfg.Cost = CostBlocks
	if b := Cost(cfg, 40*B, B, 0, 0.3, &c); b.Onboard != 0 {
		t.Fatalf("block cost charged onboarding: %s", b)
	}
}

func TestOnboardValidate(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Onboard.Disk.MsPerToken = math.NaN()
	cfg.Onboard.Host.MsPerBatch = -1
	if err := cfg.Validate(); err == nil {
		t.Fatal("NaN and negative link costs accepted")
	}
	if err := DefaultOnboard().Validate(); err != nil {
		t.Fatal(err)
	}
}
