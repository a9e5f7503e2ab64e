package benchevents

import (
	"fmt"
	"io"
)

// WriteText prints the report of a run of cfg as `kvrouter-study bench
// events` does: cfg gives the format and whether catch-up was measured.
func (r *Report) WriteText(w io.Writer, cfg Config) error {
	rate := "unpaced"
	if r.OfferedRate > 0 {
		rate = fmt.Sprintf("%.0f events/s offered", r.OfferedRate)
	}
	fmt.Fprintf(w, "ingest (%s, %s, GOMAXPROCS=%d): %d events, %d blocks in %.2fs\n",
		rate, cfg.Format, r.GOMAXPROCS, r.Events, r.Blocks, r.Seconds)
	fmt.Fprintf(w, "  %.0f events/s, %.0f blocks/s; publish->visible lag p50 %.2f ms, p90 %.2f ms, p99 %.2f ms, p99.9 %.2f ms, max %.2f ms\n",
		r.EventsPerSec, r.BlocksPerSec, r.LagP50Ms, r.LagP90Ms, r.LagP99Ms, r.LagP999Ms, r.LagMaxMs)
	fmt.Fprintf(w, "  publish->subscriber hand-off lag p50 %.2f ms, p99 %.2f ms\n", r.SubscriberP50Ms, r.SubscriberP99Ms)
	if r.CPUSeconds > 0 {
		fmt.Fprintf(w, "  %d stream messages (%.1f events each); process CPU %.2fs = %.0f blocks per CPU-second\n",
			r.Messages, float64(r.Events)/float64(max(r.Messages, 1)), r.CPUSeconds, r.BlocksPerCPUSec)
	}
	if cfg.CatchUp {
		_, err := fmt.Fprintf(w, "replica catch-up (snapshot of %d events + stream): %d blocks in %.2fs = %.0f blocks/s\n",
			r.SnapshotEvents, r.CatchUpBlocks, r.CatchUpSeconds, r.CatchUpPerSec)
		return err
	}
	return nil
}
