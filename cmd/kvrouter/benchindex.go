package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/kvrouter/kvrouter/internal/benchindex"
	"github.com/kvrouter/kvrouter/internal/traces"
)

func newBenchIndexCmd() *cobra.Command {
	cfg := benchindex.DefaultConfig()
	cfg.Trace = traces.Default
	var indexes string
	var asJSON, quiet bool
	c := &cobra.Command{
		Use:   "index",
		Short: "Benchmark the prefix indexes on a trace's real KV event stream (DESIGN.md §8)",
		Long: `index replays a Mooncake trace against the prefix indexes, Dynamo's way:
requests are split across --workers simulated workers (seeded random partition),
each worker's share runs through its own mocker engine on simulated time to
produce the real KV event stream, and lookups (each request's prompt blocks)
and events are replayed on one timeline, compressed into a --duration window,
against each index behind the concurrent wrapper (--writers sticky writer
goroutines, --readers goroutines issuing lookups inline).

--duration 0 (the default) runs an automatic sweep: the offered rate doubles
from 1M block ops/s until the index stops keeping up, then one unpaced step
measures its capacity; the best valid step is the headline, and the highest
offered rate still tracked is reported as "sustained". --sweep also writes a chart (achieved vs offered block ops/s,
log-log) and a CSV into --out. A run that leaves more than 5% of its events
queued when the replay ends is marked invalid.

Geometry: --block-size 64 (the engine default) with --tokens-per-id 512 keeps
every prompt at its recorded length, so a request is input_length/64 query
blocks and the mocker's KV cache really evicts. --block-size 512 gives one
block per trace hash id, the geometry of Dynamo's published mooncake bench.`,
		Example: "  kvrouter bench index --workers 64 --json\n  kvrouter bench index --trace synth --limit 2000",
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if cfg.Indexes, err = benchindex.ParseIndexes(indexes); err != nil {
				return err
			}
			if !quiet {
				cfg.Progress = os.Stderr
			}
			rep, err := benchindex.Run(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return writeJSON(out, rep)
			}
			if err := rep.WriteText(out); err != nil {
				return fmt.Errorf("write report: %w", err)
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&cfg.Trace, "trace", cfg.Trace, "a shipped trace (conversation, synth, azure-code, azure-conv) or a file (Mooncake JSONL or Azure CSV, plain or gzip)")
	f.IntVar(&cfg.Limit, "limit", 0, "replay only the first N requests (0 = all)")
	f.IntVar(&cfg.Workers, "workers", cfg.Workers, "simulated workers W")
	f.IntVar(&cfg.BlockSize, "block-size", cfg.BlockSize, "tokens per KV block (engine and router)")
	f.IntVar(&cfg.TokensPerID, "tokens-per-id", cfg.TokensPerID, "tokens per trace hash id (512 keeps prompt lengths; = --block-size is Dynamo's one block per id)")
	f.IntVar(&cfg.Engine.NumBlocks, "num-blocks", cfg.Engine.NumBlocks, "KV blocks per simulated worker")
	f.StringVar(&indexes, "index", "all", "index to benchmark: radix, flash or all")
	f.IntVar(&cfg.Writers, "writers", 0, "sticky writer goroutines (0 = GOMAXPROCS)")
	f.IntVar(&cfg.Shards, "shards", 0, "index shards by worker, each with its own lock (0 = one per writer; 1 = one index)")
	f.IntVar(&cfg.Readers, "readers", 0, "reader goroutines issuing lookups (0 = GOMAXPROCS)")
	f.DurationVar(&cfg.Window, "duration", 0, "replay window the timeline is compressed into (0 = auto sweep)")
	f.BoolVar(&cfg.Sweep, "sweep", false, "sweep offered rates; write a PNG chart and CSV into --out")
	f.StringVar(&cfg.OutDir, "out", cfg.OutDir, "directory for the sweep chart and CSV")
	f.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "seed of the request partition")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON")
	f.BoolVar(&quiet, "quiet", false, "no progress bars")
	return c
}
