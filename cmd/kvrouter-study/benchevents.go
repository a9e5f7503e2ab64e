package main

import (
	"fmt"
	"os"
	"runtime/pprof"

	"github.com/kvrouter/kvrouter/internal/benchevents"
	"github.com/kvrouter/kvrouter/internal/eventplane"
	"github.com/spf13/cobra"
)

// newBenchEventsCmd measures KV event ingestion through the embedded NATS.
func newBenchEventsCmd() *cobra.Command {
	var (
		cfg     benchevents.Config
		format  string
		asJSON  bool
		noCatch bool
		cpuProf string
	)
	c := &cobra.Command{
		Use:   "events",
		Short: "End-to-end KV event ingestion (publisher -> embedded NATS JetStream -> index): rate, lag, replica catch-up",
		Example: "  kvrouter-study bench events                      # unpaced\n" +
			"  kvrouter-study bench events --rate 100000 --blocks-per-event 1 --events 300000 --no-catchup   # lag goal: p99 <= 5ms\n" +
			"  kvrouter-study bench events --blocks-per-event 64 --events 50000 --cpuprofile cpu.prof      # then: go tool pprof cpu.prof\n",
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := eventplane.ParseFormat(format)
			if err != nil {
				return err
			}
			cfg.Format = f
			cfg.CatchUp = !noCatch
			cfg.Progress = cmd.ErrOrStderr()
			if cpuProf != "" {
				// The embedded server runs in-process: one profile covers
				// publisher, server, subscriber and index.
				f, err := os.Create(cpuProf)
				if err != nil {
					return fmt.Errorf("cpuprofile: %w", err)
				}
				defer f.Close()
				if err := pprof.StartCPUProfile(f); err != nil {
					return fmt.Errorf("cpuprofile: %w", err)
				}
				defer pprof.StopCPUProfile()
			}
			r, err := benchevents.Run(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return writeJSON(out, r)
			}
			rate := "unpaced"
			if r.OfferedRate > 0 {
				rate = fmt.Sprintf("%.0f events/s offered", r.OfferedRate)
			}
			fmt.Fprintf(out, "ingest (%s, %s, GOMAXPROCS=%d): %d events, %d blocks in %.2fs\n",
				rate, f, r.GOMAXPROCS, r.Events, r.Blocks, r.Seconds)
			fmt.Fprintf(out, "  %.0f events/s, %.0f blocks/s; publish->visible lag p50 %.2f ms, p90 %.2f ms, p99 %.2f ms, p99.9 %.2f ms, max %.2f ms\n",
				r.EventsPerSec, r.BlocksPerSec, r.LagP50Ms, r.LagP90Ms, r.LagP99Ms, r.LagP999Ms, r.LagMaxMs)
			fmt.Fprintf(out, "  publish->subscriber hand-off lag p50 %.2f ms, p99 %.2f ms\n", r.SubscriberP50Ms, r.SubscriberP99Ms)
			if r.CPUSeconds > 0 {
				fmt.Fprintf(out, "  %d stream messages (%.1f events each); process CPU %.2fs = %.0f blocks per CPU-second\n",
					r.Messages, float64(r.Events)/float64(max(r.Messages, 1)), r.CPUSeconds, r.BlocksPerCPUSec)
			}
			if cfg.CatchUp {
				fmt.Fprintf(out, "replica catch-up (snapshot of %d events + stream): %d blocks in %.2fs = %.0f blocks/s\n",
					r.SnapshotEvents, r.CatchUpBlocks, r.CatchUpSeconds, r.CatchUpPerSec)
			}
			return nil
		},
	}
	fs := c.Flags()
	fs.IntVar(&cfg.Events, "events", 200000, "events to publish")
	fs.Float64Var(&cfg.Rate, "rate", 0, "offered events/s (0 = unpaced)")
	fs.IntVar(&cfg.Workers, "workers", 16, "simulated workers")
	fs.IntVar(&cfg.BlocksPerEvent, "blocks-per-event", 16, "blocks per Stored event")
	fs.DurationVar(&cfg.Linger, "linger", 0, "publisher batch linger (0 = the publisher's default, 1ms; negative = send as soon as the queue is momentarily empty)")
	fs.BoolVar(&cfg.TCP, "tcp", false, "connect to the embedded server over loopback TCP instead of in-process")
	fs.StringVar(&format, "format", "msgpack", "payload: msgpack or json")
	fs.BoolVar(&asJSON, "json", false, "print the report as JSON")
	fs.BoolVar(&noCatch, "no-catchup", false, "skip the replica catch-up measurement")
	fs.StringVar(&cpuProf, "cpuprofile", "", "write a CPU profile of the whole run (publisher, embedded server, subscriber, index) to this file")
	return c
}
