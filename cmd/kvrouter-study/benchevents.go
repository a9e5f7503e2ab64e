package main

import (
	"github.com/kvrouter/kvrouter/internal/benchevents"
	"github.com/kvrouter/kvrouter/internal/eventplane"
	"github.com/kvrouter/kvrouter/internal/profile"
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
			// The embedded server runs in-process: one profile covers
			// publisher, server, subscriber and index.
			stop, err := profile.StartCPU(cpuProf)
			if err != nil {
				return err
			}
			defer stop()
			r, err := benchevents.Run(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), r)
			}
			return r.WriteText(cmd.OutOrStdout(), cfg)
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
