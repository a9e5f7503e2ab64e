package benchindex

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/kvrouter/kvrouter/internal/progress"
	"github.com/kvrouter/kvrouter/internal/traces"
	"github.com/kvrouter/kvrouter/trace"
)

// Prepared is a generated stream merged into a timeline, ready to replay
// any number of times. It lives in memory only.
type Prepared struct {
	Timeline   *Timeline
	Generation Generation
	Requests   int
	Skipped    int
	// ShortLookups counts lookups shorter than Config.LookupBlocks (kept
	// whole); 0 without a cut.
	ShortLookups int
}

// Prepare reads the trace, generates the event stream and merges the
// timeline (steps 1-3 of the package doc).
func Prepare(ctx context.Context, cfg Config) (*Prepared, error) {
	recs, err := traces.Load(cfg.Trace)
	if err != nil {
		return nil, fmt.Errorf("benchindex: %w", err)
	}
	if cfg.Limit > 0 && cfg.Limit < len(recs) {
		recs = recs[:cfg.Limit]
	}
	if recs, err = Scale(recs, cfg.Duplicate, cfg.LengthFactor); err != nil {
		return nil, err
	}
	return PrepareRecords(ctx, cfg, recs)
}

// PrepareRecords is Prepare on records already in memory (already scaled:
// Duplicate and LengthFactor are not applied here).
func PrepareRecords(ctx context.Context, cfg Config, recs []trace.Record) (*Prepared, error) {
	ecfg := cfg.Engine
	ecfg.BlockSize = cfg.BlockSize
	bar := newBar(cfg.Progress, len(recs), "generating events")
	s, st, err := Generate(ctx, recs, GenOptions{
		Workers:     cfg.Workers,
		Seed:        cfg.Seed,
		TokensPerID: cfg.TokensPerID,
		Engine:      ecfg,
		Progress:    bar.add,
	})
	bar.finish()
	if err != nil {
		return nil, err
	}
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("benchindex: generated stream: %w", err)
	}
	short := s.CutLookups(cfg.LookupBlocks)
	tl := Merge(s)
	return &Prepared{
		Timeline:     tl,
		Requests:     len(recs),
		Skipped:      st.Skipped,
		ShortLookups: short,
		Generation: Generation{
			Seconds:       st.Wall.Seconds(),
			Lookups:       tl.Lookups,
			Events:        tl.Events,
			Stored:        tl.Stored,
			Removed:       tl.Removed,
			QueryBlocks:   tl.QueryBlocks,
			StoredBlocks:  tl.StoredBlocks,
			RemovedBlocks: tl.RemovedBlocks,
			SimSpanSec:    tl.Span.Seconds(),
		},
	}, nil
}

// AutoFirstWindow is the first window of an auto sweep: the one that
// offers 1M block ops/s, well under any index's capacity.
func AutoFirstWindow(tl *Timeline) time.Duration {
	return max(time.Duration(float64(tl.BlockOps())/1e6*float64(time.Second)), time.Millisecond)
}

// Run is `kvrouter-study bench index`: prepare the stream once, then replay it
// against each selected index, and write the chart and CSV of a sweep.
func Run(ctx context.Context, cfg Config) (Report, error) {
	if err := cfg.Validate(); err != nil {
		return Report{}, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	p, err := Prepare(ctx, cfg)
	if err != nil {
		return Report{}, err
	}
	log.Info("bench index: stream generated", "requests", p.Requests, "events", p.Generation.Events,
		"seconds", p.Generation.Seconds)
	return RunPrepared(ctx, cfg, p)
}

// RunPrepared replays an already prepared stream (Run without Prepare).
func RunPrepared(ctx context.Context, cfg Config, p *Prepared) (Report, error) {
	tl := p.Timeline
	procs := runtime.GOMAXPROCS(0)
	writers, readers := cfg.Writers, cfg.Readers
	if writers <= 0 {
		writers = procs
	}
	if readers <= 0 {
		readers = procs
	}
	shards := cfg.Shards
	if shards <= 0 {
		shards = writers
	}
	window := "auto"
	if cfg.Window > 0 {
		window = cfg.Window.String()
	}
	rep := Report{
		Params: Params{
			Trace: cfg.Trace, Requests: p.Requests, BlockSize: cfg.BlockSize, Workers: cfg.Workers,
			Writers: writers, Shards: shards, Readers: readers, Window: window, Seed: cfg.Seed,
			Duplicate: max(cfg.Duplicate, 1), LengthFactor: max(cfg.LengthFactor, 1), Repeat: max(cfg.Repeat, 1),
			LookupBlocks: cfg.LookupBlocks,
			GOMAXPROCS:   procs, NumCPU: runtime.NumCPU(), GoVersion: runtime.Version(),
			Mocker: fmt.Sprintf("num_blocks=%d max_num_seqs=%d max_num_batched_tokens=%d watermark=%g tokens_per_trace_id=%d",
				cfg.Engine.NumBlocks, cfg.Engine.MaxNumSeqs, cfg.Engine.MaxNumBatchedTokens, cfg.Engine.Watermark, cfg.TokensPerID),
		},
		Generation: p.Generation,
	}
	if p.ShortLookups > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("%d of %d lookups had fewer than %d blocks and were kept whole",
			p.ShortLookups, tl.Lookups, cfg.LookupBlocks))
	}
	if p.Skipped > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("%d requests did not fit a worker's KV cache and were not simulated (still looked up)", p.Skipped))
	}
	ro := ReplayOptions{Readers: readers}
	for _, name := range cfg.Indexes {
		// The capacity hint: no worker holds more blocks than its
		// engine's KV cache.
		f, err := NewShardedTargetFactory(name, writers, shards, BlocksPerWorker(cfg.Engine.NumBlocks))
		if err != nil {
			return rep, err
		}
		if cfg.Window > 0 && !cfg.Sweep {
			bar := newBar(cfg.Progress, len(tl.Entries), "replay "+name)
			o := ro
			o.Window, o.Progress, o.ThreadCPU = cfg.Window, bar.add, cfg.LookupCPU
			s, err := Replay(ctx, tl, f, o)
			bar.finish()
			if err != nil {
				return rep, err
			}
			rep.Results = append(rep.Results, NewResult(name, tl, s))
			continue
		}
		if !cfg.Sweep {
			if err := runSearches(ctx, cfg, &rep, tl, f, ro); err != nil {
				return rep, err
			}
			continue
		}
		first := cfg.Window
		if first <= 0 {
			first = AutoFirstWindow(tl)
		}
		so := SweepOptions{First: first, Replay: ro, StopAfter: 3}
		bar := newBar(cfg.Progress, len(so.Windows())+1, "sweep "+name)
		so.OnStep = func(r Result) {
			bar.describe(fmt.Sprintf("sweep %s: offered %s achieved %s block ops/s", name,
				si(r.OfferedBlockOpsPerSec), si(r.BlockOpsPerSec)))
			bar.add(1)
		}
		steps, err := Sweep(ctx, tl, f, so)
		bar.finish()
		if err != nil {
			return rep, err
		}
		if rep.Sweep == nil {
			rep.Sweep = map[string][]Result{}
		}
		rep.Sweep[name] = steps
		best, ok := Best(steps)
		if !ok {
			rep.Notes = append(rep.Notes, name+": no valid step in the sweep; headline is the best invalid one")
		}
		rep.Results = append(rep.Results, best)
		if sus, ok := Sustained(steps); ok {
			rep.Sustained = append(rep.Sustained, sus)
		}
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		rep.Params.LoadAvg = strings.TrimSpace(string(b))
	}
	if cfg.Sweep {
		if err := os.MkdirAll(cfg.OutDir, 0o755); err != nil {
			return rep, fmt.Errorf("benchindex: %w", err)
		}
		rep.Chart = filepath.Join(cfg.OutDir, "bench-index-sweep.png")
		rep.CSV = filepath.Join(cfg.OutDir, "bench-index-sweep.csv")
		title := fmt.Sprintf("kvrouter index: %s, W=%d, B=%d, GOMAXPROCS=%d", filepath.Base(cfg.Trace), cfg.Workers, cfg.BlockSize, procs)
		if err := WriteChart(rep.Chart, title, cfg.Indexes, rep.Sweep); err != nil {
			return rep, err
		}
		fh, err := os.Create(rep.CSV)
		if err != nil {
			return rep, fmt.Errorf("benchindex: %w", err)
		}
		if err := WriteCSV(fh, cfg.Indexes, rep.Sweep); err != nil {
			fh.Close()
			return rep, fmt.Errorf("benchindex: write csv: %w", err)
		}
		if err := fh.Close(); err != nil {
			return rep, fmt.Errorf("benchindex: %w", err)
		}
	}
	return rep, nil
}

// MinSustainedWindow is the replay length under which a sustained figure is
// flagged: shorter replays measure start-up and scheduler noise.
const MinSustainedWindow = 10 * time.Second

// runSearches is the auto mode for one index: cfg.Repeat searches for the
// sustained rate, summarized.
func runSearches(ctx context.Context, cfg Config, rep *Report, tl *Timeline, f TargetFactory, ro ReplayOptions) error {
	reps := max(cfg.Repeat, 1)
	var ss []Search
	var all []Result
	for k := range reps {
		desc := fmt.Sprintf("sustained %s, repetition %d/%d", f.Name, k+1, reps)
		bar := newBar(cfg.Progress, -1, desc)
		so := SearchOptions{Replay: ro, HalfThreadCPU: cfg.LookupCPU, OnStep: func(r Result) {
			verdict := "unpaced"
			if r.WindowMS > 0 {
				verdict = "fails"
				if r.Sustains() {
					verdict = "sustains"
				}
			}
			bar.describe(fmt.Sprintf("%s: offered %s achieved %s block ops/s, %s", desc,
				si(r.OfferedBlockOpsPerSec), si(r.BlockOpsPerSec), verdict))
			bar.add(1)
		}}
		s, err := FindSustained(ctx, tl, f, so)
		bar.finish()
		if err != nil {
			return err
		}
		ss = append(ss, s)
		all = append(all, s.Capacity)
		all = append(all, s.Steps...)
	}
	if rep.Searches == nil {
		rep.Searches = map[string][]Search{}
	}
	rep.Searches[f.Name] = ss
	sum := Summarize(f.Name, ss)
	rep.Summaries = append(rep.Summaries, sum)
	best, ok := Best(all)
	if !ok {
		rep.Notes = append(rep.Notes, f.Name+": no valid replay; headline is the best invalid one")
	}
	rep.Results = append(rep.Results, best)
	switch {
	case sum.Median <= 0:
		rep.Notes = append(rep.Notes, f.Name+": no offered rate was sustained")
	case sum.At.WindowMS < ms(MinSustainedWindow):
		rep.Notes = append(rep.Notes, fmt.Sprintf("%s: the sustained replay lasted %.2fs < %v; scale the trace with --duplicate/--length-factor for a stable figure",
			f.Name, sum.At.WindowMS/1e3, MinSustainedWindow))
	}
	if sum.Median > 0 {
		rep.Sustained = append(rep.Sustained, sum.At)
	}
	if cfg.IdleLookups && tl.Lookups > 0 {
		bar := newBar(cfg.Progress, len(tl.Stream.Events), "no writers "+f.Name+": preloading every event")
		r, err := IdleLookups(ctx, tl, f, cfg.LookupCPU, bar.add)
		bar.finish()
		if err != nil {
			return err
		}
		rep.Idle = append(rep.Idle, r.Wall)
		rep.IdleStalls = append(rep.IdleStalls, r.Stalls)
		if cfg.LookupCPU {
			rep.IdleCPU = append(rep.IdleCPU, r.CPU)
		}
	}
	return nil
}

// bar is a progress bar on an optional writer; the zero value and a bar
// with no writer do nothing. add is safe for concurrent use.
type bar struct{ pb *progressbar.ProgressBar }

func newBar(w io.Writer, total int, desc string) bar {
	if w == nil || !progress.IsTerminal(w) { // no bar in a log
		return bar{}
	}
	return bar{pb: progressbar.NewOptions(total,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionShowCount(),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
	)}
}

func (b bar) add(n int) {
	if b.pb != nil {
		_ = b.pb.Add(n)
	}
}

func (b bar) describe(s string) {
	if b.pb != nil {
		b.pb.Describe(s)
	}
}

func (b bar) finish() {
	if b.pb != nil {
		_ = b.pb.Finish()
	}
}
