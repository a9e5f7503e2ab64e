package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/kvrouter/kvrouter/internal/benchindex"
	"github.com/kvrouter/kvrouter/internal/profile"
	"github.com/kvrouter/kvrouter/internal/traces"
)

func newBenchIndexCmd() *cobra.Command {
	cfg := benchindex.DefaultConfig()
	cfg.Trace = traces.Default
	var indexes string
	var asJSON, quiet bool
	var cpuProfile string
	c := &cobra.Command{
		Use:     "index",
		Short:   "Benchmark the prefix indexes on a trace's real KV event stream (DESIGN.md §8)",
		Long:    benchIndexLong,
		Example: "  kvrouter-study bench index --workers 64 --json\n  kvrouter-study bench index --trace synth --limit 2000\n  kvrouter-study bench index --index flash --duplicate 2 --length-factor 2 --lookup-blocks 64",
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if cfg.Indexes, err = benchindex.ParseIndexes(indexes); err != nil {
				return err
			}
			if !quiet {
				cfg.Progress = os.Stderr
			}
			stop, err := profile.StartCPU(cpuProfile)
			if err != nil {
				return err
			}
			defer stop()
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
	f.IntVar(&cfg.Duplicate, "duplicate", cfg.Duplicate, "replay N copies of the trace with disjoint hash ids, interleaved in time")
	f.IntVar(&cfg.LengthFactor, "length-factor", cfg.LengthFactor, "extend every prompt's blocks F times (hash id h becomes F ids)")
	f.IntVar(&cfg.Repeat, "repeat", cfg.Repeat, "sustained-rate searches per index (the report gives the spread)")
	f.IntVar(&cfg.LookupBlocks, "lookup-blocks", 0, "cut every lookup to its prompt's first N blocks (0 = whole prompts; the latency goal's shape is 64)")
	f.BoolVar(&cfg.LookupCPU, "lookup-cpu", cfg.LookupCPU, "also time each lookup's thread CPU at half the sustained rate and in a --duration replay (Linux)")
	f.BoolVar(&cfg.IdleLookups, "idle-lookups", cfg.IdleLookups, "also replay the lookups alone against each index preloaded with every event: latency with no writers (auto mode)")
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
	f.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile (pprof) of the whole run, stream generation included, to this file")
	return c
}

// benchIndexLong is bench index's --help text.
const benchIndexLong = `index replays a Mooncake trace against the prefix indexes, Dynamo's way:
requests are split across --workers simulated workers (seeded random partition),
each worker's share runs through its own mocker engine on simulated time to
produce the real KV event stream, and lookups (each request's prompt blocks)
and events are replayed on one timeline, compressed into a --duration window,
against each index behind the concurrent wrapper (--writers sticky writer
goroutines, --readers goroutines issuing lookups inline).

Block ops = requested (query) blocks + blocks in Stored events + hashes in
Removed events; a Cleared event is one op with zero blocks.

--duration 0 (the default) searches each index's sustained rate, --repeat
times: an unpaced replay measures the capacity, then paced replays start at
half of it, doubling or halving until one sustains and one fails, then
bisecting until they are within 5%. A paced replay sustains its offered rate
if every operation is issued within 1.01x the window and all of it (lookups
and applied events) completes within 1.10x. The report gives the median,
min and max sustained rate over the repetitions, with lookup p50/p99/p999 at
that rate and at half of it. A sustained replay shorter than 10 s is
flagged: scale the trace with --duplicate N (N copies with disjoint hash
ids, interleaved in time) and --length-factor F (every prompt's blocks
extended F times). --sweep instead runs the doubling sweep and writes a chart
(achieved vs offered block ops/s, log-log) and a CSV into --out. A run that
leaves more than 5% of its events queued when the replay ends is marked
invalid.

Lookup latency: --lookup-blocks N cuts every lookup to its prompt's first N
blocks (the goal's shape is --lookup-blocks 64: a 64-block prompt at W=64),
events unchanged. The replay at half the sustained rate (and a --duration
replay) also times each lookup's thread CPU (Linux, --lookup-cpu, on by
default; two clock reads per lookup): a wall-clock tail far above the CPU
tail is time the reader spent descheduled, not work. The report also counts
Flash lookups that ran in safe mode (begun during a write, or overlapped by
one and redone).

Geometry: --block-size 64 (the engine default) with --tokens-per-id 512 keeps
every prompt at its recorded length, so a request is input_length/64 query
blocks and the mocker's KV cache really evicts. --block-size 512 gives one
block per trace hash id, the geometry of Dynamo's published mooncake bench.`
