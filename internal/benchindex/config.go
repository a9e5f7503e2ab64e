package benchindex

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/kvrouter/kvrouter/mocker"
	"github.com/kvrouter/kvrouter/trace"
)

// Index names accepted by Config.Indexes.
const (
	IndexRadix = "radix"
	IndexFlash = "flash"
)

// AllIndexes lists every index the benchmark knows, in report order.
var AllIndexes = []string{IndexRadix, IndexFlash}

// Config is one `kvrouter-study bench index` run.
type Config struct {
	// Trace is the Mooncake JSONL(.gz) file. Required.
	Trace string
	// Limit replays only the first Limit requests; 0 = all.
	Limit int
	// Workers is W, the number of simulated workers. Default 64.
	Workers int
	// BlockSize is the engine's and router's block size in tokens. Default
	// 64: the mocker's and DESIGN.md §6's engine default, so lookups and
	// events are cut exactly as a production fleet at that size would cut
	// them.
	BlockSize int
	// TokensPerID is how many tokens one trace hash id becomes. Default
	// trace.TraceBlockTokens (512): prompts keep their recorded length, so
	// a request has input_length/BlockSize query blocks and the engine's KV
	// pressure is real. Set it to BlockSize for Dynamo's one-block-per-id
	// method (8x fewer, 8x shorter blocks per request at B=64).
	TokensPerID int
	// Duplicate replays N copies of the trace with disjoint hash ids,
	// interleaved in time (see Scale). Default 1; 0 means 1.
	Duplicate int
	// LengthFactor extends every prompt's blocks F times (see Scale).
	// Default 1; 0 means 1.
	LengthFactor int
	// LookupBlocks, when > 0, cuts every lookup to the first LookupBlocks
	// blocks of its prompt (prompts shorter than that stay whole): the
	// shape of the lookup-latency goal, a 64-block prompt, in the
	// sustained setting. Events are unchanged; block ops count the cut
	// lookups. Default 0: whole prompts.
	LookupBlocks int
	// LookupCPU also times each lookup's thread CPU (Linux; see
	// ReplayOptions.ThreadCPU) in the replays that report latency: the one
	// at half the sustained rate (auto mode) and a fixed-window replay.
	// Default true; false (zero) measures wall time only.
	LookupCPU bool
	// IdleLookups adds, in auto mode, one replay of the lookups alone
	// against each index preloaded with every event of the stream: the
	// lookup latency with no writers, on one reader, unpaced (Result in
	// Report.Idle). Default true; false (zero) skips it.
	IdleLookups bool
	// Repeat is how many times the auto mode searches each index's
	// sustained rate (the report gives the spread). Default 3; 0 means 1.
	Repeat int
	// Engine is the mocker configuration (BlockSize is taken from above).
	// Default mocker.DefaultConfig().
	Engine mocker.Config
	// Indexes to benchmark, by name. Default AllIndexes.
	Indexes []string
	// Writers is the number of sticky writer goroutines of the concurrent
	// wrapper. Default GOMAXPROCS.
	Writers int
	// Shards is the number of shards the index is split into, by worker
	// (indexer.Sharded: each shard has its own lock, and with one writer
	// per shard each writer owns one). Default Writers; 1 = one index.
	Shards int
	// Readers is the number of reader goroutines issuing lookups inline.
	// Default GOMAXPROCS.
	Readers int
	// Window is the wall time the whole timeline is replayed in (the offered
	// rate is its block ops / Window). Zero (the default) means auto: per
	// index and repetition, an unpaced replay (the capacity), then paced
	// replays from half of it, doubling or halving, then bisecting until
	// the highest sustained rate and the lowest failing one are within 5%
	// (FindSustained), and one replay at half the sustained rate.
	Window time.Duration
	// Sweep runs a sweep (always, even with Window set: Window is then the
	// first step) and writes a PNG chart and a CSV into OutDir.
	Sweep bool
	// OutDir receives the sweep chart and CSV. Default "bench-out".
	OutDir string
	// Seed seeds the partition of requests across workers. Default 42.
	Seed uint64
	// Progress receives the progress bars (stderr in the CLI); nil = none.
	Progress io.Writer
	// Logger; default slog.Default().
	Logger *slog.Logger
}

// DefaultConfig returns the defaults documented on Config's fields.
func DefaultConfig() Config {
	e := mocker.DefaultConfig()
	return Config{
		Workers:      64,
		BlockSize:    e.BlockSize,
		TokensPerID:  trace.TraceBlockTokens,
		Engine:       e,
		Indexes:      slices.Clone(AllIndexes),
		OutDir:       "bench-out",
		Seed:         42,
		Duplicate:    1,
		LengthFactor: 1,
		Repeat:       3,
		LookupCPU:    true,
		IdleLookups:  true,
	}
}

// Validate reports every invalid field, joined.
func (c Config) Validate() error {
	var errs []error
	if c.Trace == "" {
		errs = append(errs, errors.New("benchindex: trace path is required"))
	}
	if c.Limit < 0 {
		errs = append(errs, fmt.Errorf("benchindex: limit %d < 0", c.Limit))
	}
	if c.Workers < 1 {
		errs = append(errs, fmt.Errorf("benchindex: workers %d < 1", c.Workers))
	}
	if c.BlockSize < 1 {
		errs = append(errs, fmt.Errorf("benchindex: block size %d < 1", c.BlockSize))
	}
	if c.TokensPerID < 1 {
		errs = append(errs, fmt.Errorf("benchindex: tokens per id %d < 1", c.TokensPerID))
	}
	if c.Writers < 0 || c.Readers < 0 || c.Shards < 0 {
		errs = append(errs, fmt.Errorf("benchindex: writers %d / readers %d / shards %d must be >= 0", c.Writers, c.Readers, c.Shards))
	}
	if c.LookupBlocks < 0 {
		errs = append(errs, fmt.Errorf("benchindex: lookup blocks %d < 0", c.LookupBlocks))
	}
	if c.Duplicate < 0 || c.LengthFactor < 0 || c.Repeat < 0 {
		errs = append(errs, fmt.Errorf("benchindex: duplicate %d / length factor %d / repeat %d must be >= 0", c.Duplicate, c.LengthFactor, c.Repeat))
	}
	if c.Window < 0 {
		errs = append(errs, fmt.Errorf("benchindex: duration %v < 0", c.Window))
	}
	if len(c.Indexes) == 0 {
		errs = append(errs, errors.New("benchindex: no index selected"))
	}
	for _, n := range c.Indexes {
		if !slices.Contains(AllIndexes, n) {
			errs = append(errs, fmt.Errorf("benchindex: unknown index %q (want one of %v)", n, AllIndexes))
		}
	}
	e := c.Engine
	e.BlockSize = c.BlockSize
	if err := e.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// ParseIndexes turns "radix", "flash" or "all" (or a comma list) into index
// names.
func ParseIndexes(s string) ([]string, error) {
	if s == "all" || s == "" {
		return slices.Clone(AllIndexes), nil
	}
	var out []string
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if !slices.Contains(AllIndexes, part) {
			return nil, fmt.Errorf("benchindex: unknown index %q (want radix, flash or all)", part)
		}
		if !slices.Contains(out, part) {
			out = append(out, part)
		}
	}
	return out, nil
}
