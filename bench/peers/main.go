// Command peers runs kvrouter's index and llm-d-kv-cache's in-memory index
// (github.com/llm-d/llm-d-kv-cache v0.9.0, pkg/kvcache/kvblock) side by side
// on the same KV event stream and the same queries, and prints the ratios.
// See README.md for the method and the exact commands.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"slices"

	"github.com/go-logr/logr"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kvrouter/kvrouter/internal/benchindex"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "peers:", err)
		os.Exit(1)
	}
}

// phase is one measured replay of one index.
type phase struct {
	Name        string  `json:"phase"`
	Index       string  `json:"index"`
	WallMS      float64 `json:"wall_ms"`    // until the last entry was issued
	DrainedMS   float64 `json:"drained_ms"` // until every event was applied
	OpsPerSec   float64 `json:"ops_per_sec"`
	BlockOps    float64 `json:"block_ops_per_sec"`
	LookupsSec  float64 `json:"lookups_per_sec"`
	EventsSec   float64 `json:"events_per_sec"` // events / drained
	P50us       float64 `json:"lookup_p50_us"`
	P99us       float64 `json:"lookup_p99_us"`
	P999us      float64 `json:"lookup_p999_us"`
	MeanMatch   float64 `json:"mean_match"`
	Rejected    uint64  `json:"rejected_events"`
	HeapPerBlk  float64 `json:"heap_bytes_per_block,omitempty"`
	IndexBlocks int     `json:"index_blocks,omitempty"`
}

func run() error {
	cfg := benchindex.DefaultConfig()
	cfg.Trace = "../../../shared/data/conversation_trace.jsonl.gz"
	ours := flag.String("index", "flash", "our index to compare: radix or flash")
	repeat := flag.Int("repeat", 3, "runs per phase; the median by wall time is reported")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the llm-d phases to this file")
	asJSON := flag.Bool("json", false, "print JSON")
	podsPerKey := flag.Int("llmd-pods-per-key", 0, "llm-d InMemoryIndexConfig.PodCacheSize (0 = its default, 10)")
	flag.StringVar(&cfg.Trace, "trace", cfg.Trace, "Mooncake trace (JSONL, plain or gzip)")
	flag.IntVar(&cfg.Limit, "limit", 0, "first N requests only (0 = all)")
	flag.IntVar(&cfg.Workers, "workers", cfg.Workers, "simulated workers W")
	flag.IntVar(&cfg.BlockSize, "block-size", cfg.BlockSize, "tokens per block")
	flag.IntVar(&cfg.TokensPerID, "tokens-per-id", cfg.TokensPerID, "tokens per trace hash id")
	flag.IntVar(&cfg.Writers, "writers", 0, "sticky writer goroutines (0 = GOMAXPROCS)")
	flag.IntVar(&cfg.Readers, "readers", 0, "lookup goroutines (0 = GOMAXPROCS)")
	flag.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "partition seed")
	flag.Parse()
	// llm-d logs through controller-runtime's logger; its trace-level calls
	// stay in the hot paths (as shipped) but go nowhere, as in a deployment
	// at the default level. Without a logger it prints a warning after 30 s.
	crlog.SetLogger(logr.Discard())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	writers := cfg.Writers
	if writers <= 0 {
		writers = runtime.GOMAXPROCS(0)
	}
	p, err := benchindex.Prepare(ctx, cfg)
	if err != nil {
		return err
	}
	tl := p.Timeline
	keys := llmdKeys(tl.Stream)
	ourF, err := benchindex.NewTargetFactory(*ours, writers)
	if err != nil {
		return err
	}
	peerF := benchindex.TargetFactory{Name: "llm-d", New: func() (benchindex.Target, error) {
		return newLLMDTarget(keys, cfg.Workers, writers, *podsPerKey)
	}}

	eventsTL := benchindex.Merge(tl.Stream.EventsOnly())
	lookupsTL := benchindex.Merge(tl.Stream.LookupsOnly())
	ro := benchindex.ReplayOptions{Readers: cfg.Readers}
	var phases []phase
	for _, f := range []benchindex.TargetFactory{ourF, peerF} {
		var prof *os.File
		if *cpuprofile != "" && f.Name == "llm-d" {
			if prof, err = os.Create(*cpuprofile); err != nil {
				return err
			}
			if err := pprof.StartCPUProfile(prof); err != nil {
				return err
			}
		}
		for _, ph := range []struct {
			name string
			tl   *benchindex.Timeline
			f    benchindex.TargetFactory
		}{
			{"events", eventsTL, f},
			{"lookups", lookupsTL, benchindex.WithPreload(f, tl.Stream.Events)},
			{"mixed", tl, f},
		} {
			r, err := measure(ctx, ph.name, ph.tl, ph.f, ro, *repeat)
			if err != nil {
				return fmt.Errorf("%s %s: %w", f.Name, ph.name, err)
			}
			phases = append(phases, r)
			fmt.Fprintf(os.Stderr, "%-6s %-7s done (%.0f ms)\n", f.Name, ph.name, r.DrainedMS)
		}
		if prof != nil {
			pprof.StopCPUProfile()
			if err := prof.Close(); err != nil {
				return err
			}
		}
	}
	heapOurs, blocks, err := heapPerBlock(ourF, tl.Stream.Events)
	if err != nil {
		return err
	}
	heapPeer, _, err := heapPerBlock(peerF, tl.Stream.Events)
	if err != nil {
		return err
	}
	out := report{
		Trace: cfg.Trace, Requests: p.Requests, Workers: cfg.Workers, BlockSize: cfg.BlockSize,
		TokensPerID: cfg.TokensPerID, Writers: writers, Readers: max(cfg.Readers, 0), GOMAXPROCS: runtime.GOMAXPROCS(0),
		Peer:       "github.com/llm-d/llm-d-kv-cache v0.9.0 kvblock.InMemoryIndex (default config) + LongestPrefixScorer",
		Generation: p.Generation, Phases: phases,
		HeapBytesPerBlock: map[string]float64{*ours: heapOurs, "llm-d": heapPeer}, IndexBlocks: blocks,
	}
	out.Ratios = ratios(phases, *ours)
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	out.print()
	return nil
}

type report struct {
	Trace             string                `json:"trace"`
	Requests          int                   `json:"requests"`
	Workers           int                   `json:"workers"`
	BlockSize         int                   `json:"block_size"`
	TokensPerID       int                   `json:"tokens_per_id"`
	Writers           int                   `json:"writers"`
	Readers           int                   `json:"readers"`
	GOMAXPROCS        int                   `json:"gomaxprocs"`
	Peer              string                `json:"peer"`
	Generation        benchindex.Generation `json:"generation"`
	Phases            []phase               `json:"phases"`
	HeapBytesPerBlock map[string]float64    `json:"heap_bytes_per_block"`
	IndexBlocks       int                   `json:"index_blocks"`
	Ratios            map[string]float64    `json:"ratios_ours_over_llmd"`
}

// measure runs one phase repeat times, unpaced, and keeps the median run.
func measure(ctx context.Context, name string, tl *benchindex.Timeline, f benchindex.TargetFactory,
	ro benchindex.ReplayOptions, repeat int) (phase, error) {
	var runs []phase
	for range max(repeat, 1) {
		runtime.GC()
		s, err := benchindex.Replay(ctx, tl, f, ro)
		if err != nil {
			return phase{}, err
		}
		r := benchindex.NewResult(f.Name, tl, s)
		ph := phase{Name: name, Index: f.Name, WallMS: r.WallMS, DrainedMS: float64(s.Drained) / 1e6,
			OpsPerSec: r.OpsPerSec, BlockOps: r.BlockOpsPerSec, LookupsSec: r.LookupsPerSec,
			P50us: r.LookupP50us, P99us: r.LookupP99us, P999us: r.LookupP999us, MeanMatch: r.MeanMatch,
			Rejected: s.Final.Rejected}
		if tl.Events > 0 && s.Drained > 0 {
			ph.EventsSec = float64(tl.Events) / s.Drained.Seconds()
		}
		if name == "events" || name == "mixed" {
			// Throughput counts until everything is applied.
			secs := s.Drained.Seconds()
			ph.OpsPerSec = float64(tl.Ops()) / secs
			ph.BlockOps = float64(tl.BlockOps()) / secs
		}
		runs = append(runs, ph)
	}
	slices.SortFunc(runs, func(a, b phase) int { return cmpFloat(a.DrainedMS, b.DrainedMS) })
	return runs[len(runs)/2], nil
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// heapPerBlock builds the final index state and measures the live heap it
// adds, per (worker, block) pair of our index's final state.
func heapPerBlock(f benchindex.TargetFactory, evs []benchindex.TimedEvent) (float64, int, error) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	t, err := benchindex.WithPreload(f, evs).New()
	if err != nil {
		return 0, 0, err
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	blocks := 0
	if it, ok := t.(*benchindex.IndexTarget); ok {
		blocks = it.Index().Stats().Blocks
	}
	runtime.KeepAlive(t)
	if blocks == 0 {
		blocks = lastBlocks
	}
	lastBlocks = blocks
	if blocks == 0 {
		return 0, 0, nil
	}
	return float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(blocks), blocks, nil
}

// lastBlocks carries our index's final block count to the peer's heap
// measurement: both hold the same (worker, block) pairs after the stream.
var lastBlocks int

func ratios(ps []phase, ours string) map[string]float64 {
	get := func(idx, name string) phase {
		for _, p := range ps {
			if p.Index == idx && p.Name == name {
				return p
			}
		}
		return phase{}
	}
	div := func(a, b float64) float64 {
		if b == 0 {
			return 0
		}
		return a / b
	}
	o, l := get(ours, "lookups"), get("llm-d", "lookups")
	oe, le := get(ours, "events"), get("llm-d", "events")
	om, lm := get(ours, "mixed"), get("llm-d", "mixed")
	return map[string]float64{
		"lookup_throughput":        div(o.LookupsSec, l.LookupsSec),
		"lookup_p50_latency":       div(l.P50us, o.P50us), // >1: ours faster
		"lookup_p99_latency":       div(l.P99us, o.P99us),
		"lookup_p999_latency":      div(l.P999us, o.P999us),
		"event_throughput":         div(oe.EventsSec, le.EventsSec),
		"mixed_block_ops":          div(om.BlockOps, lm.BlockOps),
		"mixed_ops":                div(om.OpsPerSec, lm.OpsPerSec),
		"mixed_lookup_p99_latency": div(lm.P99us, om.P99us),
	}
}

func (r report) print() {
	fmt.Printf("trace %s (%d requests), W=%d, block size %d, tokens/id %d, writers %d, GOMAXPROCS %d\n",
		r.Trace, r.Requests, r.Workers, r.BlockSize, r.TokensPerID, r.Writers, r.GOMAXPROCS)
	g := r.Generation
	fmt.Printf("stream: %d lookups (%d blocks), %d events (%d stored blocks, %d removed hashes)\npeer: %s\n\n",
		g.Lookups, g.QueryBlocks, g.Events, g.StoredBlocks, g.RemovedBlocks, r.Peer)
	fmt.Printf("%-7s %-6s %10s %10s %13s %13s %12s %9s %9s %9s %8s\n", "phase", "index", "wall ms", "drain ms",
		"ops/s", "block ops/s", "lookups/s", "p50 µs", "p99 µs", "p999 µs", "match")
	for _, p := range r.Phases {
		fmt.Printf("%-7s %-6s %10.1f %10.1f %13.0f %13.0f %12.0f %9.2f %9.2f %9.2f %8.2f\n", p.Name, p.Index,
			p.WallMS, p.DrainedMS, p.OpsPerSec, p.BlockOps, p.LookupsSec, p.P50us, p.P99us, p.P999us, p.MeanMatch)
	}
	fmt.Printf("\nheap bytes per (worker, block) after the whole stream (%d pairs):", r.IndexBlocks)
	for k, v := range r.HeapBytesPerBlock {
		fmt.Printf(" %s %.0f", k, v)
	}
	fmt.Printf("\n\nratios, ours / llm-d (latency: llm-d / ours, so > 1 means ours is faster):\n")
	keys := make([]string, 0, len(r.Ratios))
	for k := range r.Ratios {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Printf("  %-26s %8.1fx\n", k, r.Ratios[k])
	}
}
