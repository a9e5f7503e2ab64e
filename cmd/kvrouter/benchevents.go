package main

import (
	"encoding/json"
	"fmt"

	"github.com/kvrouter/kvrouter/internal/eventplane"
	"github.com/kvrouter/kvrouter/internal/eventplane/evbench"
	"github.com/spf13/cobra"
)

// newBenchEventsCmd measures KV event ingestion through the embedded NATS.
func newBenchEventsCmd() *cobra.Command {
	var (
		cfg     evbench.Config
		format  string
		asJSON  bool
		noCatch bool
	)
	c := &cobra.Command{
		Use:   "events",
		Short: "End-to-end KV event ingestion (publisher -> embedded NATS JetStream -> index): rate, lag, replica catch-up",
		Example: "  kvrouter bench events                      # unpaced\n" +
			"  kvrouter bench events --rate 100000 --events 500000\n",
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := eventplane.ParseFormat(format)
			if err != nil {
				return err
			}
			cfg.Format = f
			cfg.CatchUp = !noCatch
			cfg.Progress = cmd.ErrOrStderr()
			r, err := evbench.Run(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(r)
			}
			rate := "unpaced"
			if r.OfferedRate > 0 {
				rate = fmt.Sprintf("%.0f events/s offered", r.OfferedRate)
			}
			fmt.Fprintf(out, "ingest (%s, %s, GOMAXPROCS=%d): %d events, %d blocks in %.2fs\n",
				rate, f, r.GOMAXPROCS, r.Events, r.Blocks, r.Seconds)
			fmt.Fprintf(out, "  %.0f events/s, %.0f blocks/s; publish->visible lag p50 %.2f ms, p99 %.2f ms, max %.2f ms\n",
				r.EventsPerSec, r.BlocksPerSec, r.LagP50Ms, r.LagP99Ms, r.LagMaxMs)
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
	fs.DurationVar(&cfg.Linger, "linger", 0, "publisher batch linger (0 = send when the queue is momentarily empty)")
	fs.StringVar(&format, "format", "msgpack", "payload: msgpack or json")
	fs.BoolVar(&asJSON, "json", false, "print the report as JSON")
	fs.BoolVar(&noCatch, "no-catchup", false, "skip the replica catch-up measurement")
	return c
}
