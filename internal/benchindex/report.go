package benchindex

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"
)

// MaxQueuedFrac is the share of events that may still be queued in the
// writers when the wall clock stops; above it a run is invalid.
const MaxQueuedFrac = 0.05

// Params are the parameters a report must state (DESIGN.md §8).
type Params struct {
	Trace     string `json:"trace"`
	Requests  int    `json:"requests"` // requests replayed (after --limit)
	BlockSize int    `json:"block_size"`
	Workers   int    `json:"workers"`
	Writers   int    `json:"writers"`
	Shards    int    `json:"shards"` // index shards by worker (1 = one index)
	Readers   int    `json:"readers"`
	Window    string `json:"duration"` // replay window, or "auto"
	Seed      uint64 `json:"seed"`
	// Duplicate and LengthFactor scaled the trace (see Scale); Repeat is
	// the number of sustained-rate searches per index.
	Duplicate    int `json:"duplicate"`
	LengthFactor int `json:"length_factor"`
	Repeat       int `json:"repeat"`
	// LookupBlocks cut every lookup to its prompt's first blocks (0: whole
	// prompts).
	LookupBlocks int    `json:"lookup_blocks,omitempty"`
	GOMAXPROCS   int    `json:"gomaxprocs"`
	NumCPU       int    `json:"num_cpu"`
	GoVersion    string `json:"go_version"`
	Mocker       string `json:"mocker,omitempty"` // engine parameters used for generation
	// LoadAvg is /proc/loadavg when the replays ended (other processes on a
	// shared machine take CPU from the benchmark); empty when unavailable.
	LoadAvg string `json:"loadavg,omitempty"`
}

// Generation describes the generated stream.
type Generation struct {
	Seconds       float64 `json:"seconds"`
	Lookups       int     `json:"lookups"`
	Events        int     `json:"events"`
	Stored        int     `json:"stored_events"`
	Removed       int     `json:"removed_events"`
	QueryBlocks   int64   `json:"query_blocks"`
	StoredBlocks  int64   `json:"stored_blocks"`
	RemovedBlocks int64   `json:"removed_blocks"`
	SimSpanSec    float64 `json:"sim_span_seconds"` // source-clock span of the timeline
}

// Result is one replay of one index, in the units of DESIGN.md §8.
type Result struct {
	Index    string  `json:"index"`
	WindowMS float64 `json:"window_ms"` // 0 = unpaced
	WallMS   float64 `json:"wall_ms"`

	Lookups     int   `json:"lookups"`
	Events      int   `json:"events"`
	QueryBlocks int64 `json:"query_blocks"`
	StoredBlock int64 `json:"stored_blocks"`

	OfferedOpsPerSec      float64 `json:"offered_ops_per_sec"` // 0 when unpaced
	OfferedBlockOpsPerSec float64 `json:"offered_block_ops_per_sec"`
	OpsPerSec             float64 `json:"ops_per_sec"`
	BlockOpsPerSec        float64 `json:"block_ops_per_sec"`
	LookupsPerSec         float64 `json:"lookups_per_sec"`

	LookupP50us  float64 `json:"lookup_p50_us"`
	LookupP99us  float64 `json:"lookup_p99_us"`
	LookupP999us float64 `json:"lookup_p999_us"`
	LookupMaxus  float64 `json:"lookup_max_us"`
	// Thread CPU time of the same lookups (ReplayOptions.ThreadCPU; 0
	// when not measured), and CPUBaselineus, the clock reads' own share
	// included in each (an empty bracket's median). A wall tail far above
	// the CPU tail is time the reader spent descheduled.
	LookupCPUP50us  float64 `json:"lookup_cpu_p50_us,omitempty"`
	LookupCPUP99us  float64 `json:"lookup_cpu_p99_us,omitempty"`
	LookupCPUP999us float64 `json:"lookup_cpu_p999_us,omitempty"`
	CPUBaselineus   float64 `json:"cpu_baseline_us,omitempty"`
	// Lookups whose thread was switched off its CPU mid-lookup (a share
	// of all lookups), and the wall and CPU tails of the others: the
	// index's own tail, without descheduling.
	SwitchedFrac    float64 `json:"switched_frac,omitempty"`
	QuietWallP50us  float64 `json:"quiet_wall_p50_us,omitempty"`
	QuietWallP99us  float64 `json:"quiet_wall_p99_us,omitempty"`
	QuietWallP999us float64 `json:"quiet_wall_p999_us,omitempty"`
	QuietCPUP99us   float64 `json:"quiet_cpu_p99_us,omitempty"`
	// SafeStarted and SafeRedone count index lookups that ran Flash's
	// safe mode (indexer.Stats; one per shard per lookup): begun during a
	// write, or overlapped by one and redone.
	SafeStarted uint64  `json:"safe_started,omitempty"`
	SafeRedone  uint64  `json:"safe_redone,omitempty"`
	MeanMatch   float64 `json:"mean_match"` // mean Lookup result (depth), a sanity figure

	// DrainMS is the time from the first entry's release until every
	// event was applied (the writers drained), as measured by Finish.
	DrainMS float64 `json:"drain_ms"`
	// Issued (paced runs): every operation was issued within IssueSlack x
	// the window (the reference's "valid trial").
	Issued bool `json:"issued_in_window"`
	// KeptUp (paced runs): every operation completed (lookups returned,
	// events applied) within KeepUpSlack x the window.
	KeptUp bool `json:"kept_up"`

	Queued        int64   `json:"events_queued_at_end"`
	QueuedFrac    float64 `json:"events_queued_frac"`
	Valid         bool    `json:"valid"`
	Invalid       string  `json:"invalid_reason,omitempty"`
	Tracking      bool    `json:"tracking"` // achieved >= 90% of offered
	IndexBlocks   int     `json:"index_blocks"`
	BytesPerBlock float64 `json:"bytes_per_block"`
	Rejected      uint64  `json:"rejected_events"`
	// HeapPerBlock is Sample.HeapBytes per cached (worker, block).
	HeapPerBlock float64 `json:"heap_bytes_per_block"`
}

// TrackingFrac is how close achieved must be to offered for a paced run to
// count as tracking (the chart's knee; the sustained figure uses Issued and
// KeptUp instead).
const TrackingFrac = 0.90

// The reference's sustained-throughput definition (DESIGN.md §8): a paced
// trial is valid if every operation is issued within IssueSlack x the
// window, and kept up if all of it completes within KeepUpSlack x.
const (
	IssueSlack  = 1.01
	KeepUpSlack = 1.10
)

// Sustains reports whether a paced run counts towards the sustained figure:
// valid (queue and rejections), every op issued in time, and kept up.
func (r Result) Sustains() bool { return r.WindowMS > 0 && r.Valid && r.Issued && r.KeptUp }

// NewResult computes a Result from a replay of tl. It is pure arithmetic.
func NewResult(index string, tl *Timeline, s Sample) Result {
	r := Result{
		Index:       index,
		WindowMS:    ms(s.Window),
		WallMS:      ms(s.Wall),
		DrainMS:     ms(s.Drained),
		Lookups:     tl.Lookups,
		Events:      tl.Events,
		QueryBlocks: tl.QueryBlocks,
		StoredBlock: tl.StoredBlocks,
		Queued:      s.Queued,
		IndexBlocks: s.Final.Blocks,
		Rejected:    s.Final.Rejected,
	}
	if secs := s.Wall.Seconds(); secs > 0 {
		r.OpsPerSec = float64(tl.Ops()) / secs
		r.BlockOpsPerSec = float64(tl.BlockOps()) / secs
		r.LookupsPerSec = float64(tl.Lookups) / secs
	}
	if secs := s.Window.Seconds(); secs > 0 {
		r.OfferedOpsPerSec = float64(tl.Ops()) / secs
		r.OfferedBlockOpsPerSec = float64(tl.BlockOps()) / secs
		r.Tracking = r.BlockOpsPerSec >= TrackingFrac*r.OfferedBlockOpsPerSec
		r.Issued = s.Wall.Seconds() <= IssueSlack*secs
		r.KeptUp = max(s.Wall, s.Drained).Seconds() <= KeepUpSlack*secs
	}
	if h := s.Lookups; h != nil && h.TotalCount() > 0 {
		r.LookupP50us = us(h.ValueAtQuantile(50))
		r.LookupP99us = us(h.ValueAtQuantile(99))
		r.LookupP999us = us(h.ValueAtQuantile(99.9))
		r.LookupMaxus = us(h.Max())
	}
	if h := s.LookupsCPU; h != nil && h.TotalCount() > 0 {
		r.LookupCPUP50us = us(h.ValueAtQuantile(50))
		r.LookupCPUP99us = us(h.ValueAtQuantile(99))
		r.LookupCPUP999us = us(h.ValueAtQuantile(99.9))
		r.CPUBaselineus = us(int64(s.CPUBaseline))
		r.SwitchedFrac = float64(s.Switched) / float64(h.TotalCount())
	}
	if h := s.QuietWall; h != nil && h.TotalCount() > 0 {
		r.QuietWallP50us = us(h.ValueAtQuantile(50))
		r.QuietWallP99us = us(h.ValueAtQuantile(99))
		r.QuietWallP999us = us(h.ValueAtQuantile(99.9))
		r.QuietCPUP99us = us(s.QuietCPU.ValueAtQuantile(99))
	}
	r.SafeStarted, r.SafeRedone = s.Final.SafeStarted, s.Final.SafeRedone
	if tl.Lookups > 0 {
		r.MeanMatch = float64(s.MatchSum) / float64(tl.Lookups)
	}
	if tl.Events > 0 {
		r.QueuedFrac = float64(s.Queued) / float64(tl.Events)
	}
	if s.Final.Blocks > 0 && s.Final.Bytes > 0 {
		r.BytesPerBlock = float64(s.Final.Bytes) / float64(s.Final.Blocks)
	}
	if s.Final.Blocks > 0 && s.HeapBytes > 0 {
		r.HeapPerBlock = float64(s.HeapBytes) / float64(s.Final.Blocks)
	}
	r.Valid, r.Invalid = validity(r)
	return r
}

// validity marks a run invalid when it left more than MaxQueuedFrac of its
// events queued, or when the index rejected events of a well-formed stream.
func validity(r Result) (bool, string) {
	var why []string
	if r.QueuedFrac > MaxQueuedFrac {
		why = append(why, fmt.Sprintf("%.1f%% of events still queued at the end (limit %.0f%%)",
			100*r.QueuedFrac, 100*MaxQueuedFrac))
	}
	if r.Rejected > 0 {
		why = append(why, fmt.Sprintf("%d events rejected", r.Rejected))
	}
	return len(why) == 0, strings.Join(why, "; ")
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
func us(ns int64) float64        { return float64(ns) / 1e3 }

// Report is the output of Run.
type Report struct {
	Params     Params     `json:"params"`
	Generation Generation `json:"generation"`
	// Results holds one headline result per index: the run at the fixed
	// window, or in auto/sweep mode the valid run with the highest
	// achieved block ops/s.
	Results []Result `json:"results"`
	// Sweep holds every run of auto or sweep mode, per index, in the
	// order they ran (offered rate increasing).
	Sweep map[string][]Result `json:"sweep,omitempty"`
	// Sustained holds, per index, the paced step with the highest offered
	// rate the index sustained (Result.Sustains); in auto mode, that of the
	// median repetition.
	Sustained []Result `json:"sustained,omitempty"`
	// Searches holds every sustained-rate search of auto mode, per index.
	Searches map[string][]Search `json:"searches,omitempty"`
	// Summaries condenses Searches per index (spread over repetitions).
	Summaries []Summary `json:"sustained_summary,omitempty"`
	// Idle holds, per index, the lookups replayed alone against the index
	// preloaded with every event (Config.IdleLookups): no writers.
	Idle []Result `json:"idle_lookups,omitempty"`
	// IdleCPU holds, per index, the same lookups replayed again on the
	// same index with their thread CPU timed too (Config.LookupCPU; the
	// clock's system calls slow the lookups, so Idle is timed without).
	IdleCPU []Result `json:"idle_lookups_cpu,omitempty"`
	// IdleStalls holds, per index, the stall probe run just before the
	// lookups of Idle (ProbeStalls).
	IdleStalls []Stalls `json:"idle_stalls,omitempty"`
	Chart      string   `json:"chart,omitempty"` // PNG path written by --sweep
	CSV        string   `json:"csv,omitempty"`
	Notes      []string `json:"notes,omitempty"`
}

// WriteText prints the report for humans.
func (rep *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	p := rep.Params
	fmt.Fprintf(&b, "trace %s (%d requests), block size %d, W=%d workers, %d writers, %d shards, %d readers, window %s, seed %d, GOMAXPROCS %d (%d CPUs), %s\n",
		p.Trace, p.Requests, p.BlockSize, p.Workers, p.Writers, p.Shards, p.Readers, p.Window, p.Seed, p.GOMAXPROCS, p.NumCPU, p.GoVersion)
	if p.LoadAvg != "" {
		fmt.Fprintf(&b, "load average at the end: %s\n", p.LoadAvg)
	}
	g := rep.Generation
	fmt.Fprintf(&b, "stream: %d lookups (%d query blocks), %d events (%d stored with %d blocks, %d removed with %d hashes), generated in %.1fs, simulated span %.0fs\n",
		g.Lookups, g.QueryBlocks, g.Events, g.Stored, g.StoredBlocks, g.Removed, g.RemovedBlocks, g.Seconds, g.SimSpanSec)
	fmt.Fprintf(&b, "block ops = requested (query) blocks + blocks in Stored events + hashes in Removed events; a Cleared event is one op with zero blocks\n")
	if p.Duplicate > 1 || p.LengthFactor > 1 {
		fmt.Fprintf(&b, "trace scaled: %d copies with disjoint hash ids (--duplicate), prompts extended %dx (--length-factor)\n", p.Duplicate, p.LengthFactor)
	}
	if p.LookupBlocks > 0 {
		fmt.Fprintf(&b, "lookups cut to their prompt's first %d blocks (--lookup-blocks); events unchanged\n", p.LookupBlocks)
	}
	rep.writeSearches(&b)
	for _, head := range rep.Results {
		name := head.Index
		steps, ok := rep.Sweep[name]
		if !ok {
			continue
		}
		fmt.Fprintf(&b, "\nsweep %s:\n", name)
		fmt.Fprintf(&b, "  (window 0 = unpaced: every entry due at once, the capacity)\n")
		fmt.Fprintf(&b, "  %10s %14s %14s %12s %8s %8s %8s %7s %s\n", "window", "offered blk/s", "achieved blk/s", "ops/s", "p50 µs", "p99 µs", "p999 µs", "queued", "")
		for _, r := range steps {
			fmt.Fprintf(&b, "  %8.1fms %14s %14s %12s %8.2f %8.2f %8.2f %6.1f%% %s\n",
				r.WindowMS, si(r.OfferedBlockOpsPerSec), si(r.BlockOpsPerSec), si(r.OpsPerSec),
				r.LookupP50us, r.LookupP99us, r.LookupP999us, 100*r.QueuedFrac, flags(r))
		}
	}
	b.WriteString("\n")
	if len(rep.Summaries) == 0 {
		for _, r := range rep.Sustained {
			fmt.Fprintf(&b, "%-6s sustains up to %s block ops/s offered (%s ops/s, window %.1f ms)\n",
				r.Index, si(r.OfferedBlockOpsPerSec), si(r.OfferedOpsPerSec), r.WindowMS)
		}
	}
	for _, sm := range rep.Summaries {
		if sm.Median <= 0 {
			fmt.Fprintf(&b, "%-6s sustained: none of the offered rates\n", sm.Index)
			continue
		}
		fmt.Fprintf(&b, "%-6s sustained %s block ops/s (median of %d; min %s, max %s, spread %.0f%%); lookup p50/p99/p999 %.2f/%.2f/%.2f µs there, %.2f/%.2f/%.2f µs at half (%s)\n",
			sm.Index, si(sm.Median), len(sm.Rates), si(sm.Min), si(sm.Max), sm.SpreadPct,
			sm.At.LookupP50us, sm.At.LookupP99us, sm.At.LookupP999us,
			sm.Half.LookupP50us, sm.Half.LookupP99us, sm.Half.LookupP999us, si(sm.Half.OfferedBlockOpsPerSec))
		if h := sm.Half; h.LookupCPUP50us > 0 {
			fmt.Fprintf(&b, "%-6s at half: %s\n", sm.Index, cpuText(h))
		}
		if h := sm.Half; h.SafeStarted+h.SafeRedone > 0 {
			fmt.Fprintf(&b, "%-6s at half: %s\n", sm.Index, safeText(h, p.Shards))
		}
	}
	for _, r := range rep.Idle {
		fmt.Fprintf(&b, "%-6s no writers (every event preloaded, lookups alone, 1 reader, unpaced): lookup p50/p99/p999 %.2f/%.2f/%.2f µs, %s lookups/s\n",
			r.Index, r.LookupP50us, r.LookupP99us, r.LookupP999us, si(r.LookupsPerSec))
	}
	for i, st := range rep.IdleStalls {
		if i < len(rep.Idle) {
			fmt.Fprintf(&b, "%-6s no writers: %s\n", rep.Idle[i].Index, stallText(st, rep.Idle[i].LookupP50us))
		}
	}
	for _, r := range rep.IdleCPU {
		fmt.Fprintf(&b, "%-6s no writers, a second pass timing thread CPU too (its clock's system calls slow the lookups): %s\n", r.Index, cpuText(r))
	}
	for _, r := range rep.Results {
		fmt.Fprintf(&b, "%-6s %s block ops/s, %s ops/s (%s lookups/s), lookup p50 %.2f µs p99 %.2f µs p999 %.2f µs, %s bytes/block (heap %.0f), queued %.1f%%, window %.1f ms, wall %.1f ms %s\n",
			r.Index, si(r.BlockOpsPerSec), si(r.OpsPerSec), si(r.LookupsPerSec), r.LookupP50us, r.LookupP99us, r.LookupP999us,
			fmt.Sprintf("%.0f", r.BytesPerBlock), r.HeapPerBlock, 100*r.QueuedFrac, r.WindowMS, r.WallMS, flags(r))
		if r.LookupCPUP50us > 0 {
			fmt.Fprintf(&b, "%-6s %s\n", r.Index, cpuText(r))
		}
		if r.SafeStarted+r.SafeRedone > 0 {
			fmt.Fprintf(&b, "%-6s %s\n", r.Index, safeText(r, p.Shards))
		}
	}
	if rep.Chart != "" {
		fmt.Fprintf(&b, "chart %s, csv %s\n", rep.Chart, rep.CSV)
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeSearches prints every step of the auto mode's searches.
func (rep *Report) writeSearches(b *strings.Builder) {
	for _, sm := range rep.Summaries {
		for k, s := range rep.Searches[sm.Index] {
			fmt.Fprintf(b, "\nsustained search %s, repetition %d (sustains: issued within %.2fx the window, complete within %.2fx, valid):\n",
				sm.Index, k+1, IssueSlack, KeepUpSlack)
			fmt.Fprintf(b, "  %10s %14s %14s %8s %8s %8s %8s %8s %6s %s\n", "window", "offered blk/s", "achieved blk/s", "issue/w", "done/w", "p50 µs", "p99 µs", "p999 µs", "safe", "")
			rows := append([]Result{s.Capacity}, s.Steps...)
			if s.Found {
				rows = append(rows, s.Half)
			}
			for i, r := range rows {
				verdict := "unpaced (capacity)"
				if i > 0 {
					verdict = "fails"
					if r.Sustains() {
						verdict = "sustains"
					}
					if s.Found && i == len(rows)-1 {
						verdict += " (half the sustained rate)"
					}
				}
				iw, dw := 0.0, 0.0
				if r.WindowMS > 0 {
					iw, dw = r.WallMS/r.WindowMS, max(r.WallMS, r.DrainMS)/r.WindowMS
				}
				if r.LookupCPUP50us > 0 {
					verdict += fmt.Sprintf("; thread CPU p50/p99/p999 %.2f/%.2f/%.2f µs", r.LookupCPUP50us, r.LookupCPUP99us, r.LookupCPUP999us)
				}
				fmt.Fprintf(b, "  %8.1fms %14s %14s %8.3f %8.3f %8.2f %8.2f %8.2f %5.2f%% %s\n",
					r.WindowMS, si(r.OfferedBlockOpsPerSec), si(r.BlockOpsPerSec), iw, dw,
					r.LookupP50us, r.LookupP99us, r.LookupP999us, 100*safeFrac(r, rep.Params.Shards), verdict)
			}
		}
	}
}

// safeFrac is the share of index lookups (one per shard per lookup) that
// ran in safe mode.
func safeFrac(r Result, shards int) float64 {
	n := float64(r.Lookups) * float64(max(shards, 1))
	if n == 0 {
		return 0
	}
	return float64(r.SafeStarted+r.SafeRedone) / n
}

// cpuText splits a result's lookup tail into work and descheduling.
func cpuText(r Result) string {
	return fmt.Sprintf("lookup thread CPU p50/p99/p999 %.2f/%.2f/%.2f µs (each includes ~%.2f µs of clock reads) against wall %.2f/%.2f/%.2f µs; "+
		"%.2f%% of lookups were switched off their CPU mid-lookup, the others took wall p50/p99/p999 %.2f/%.2f/%.2f µs (CPU p99 %.2f µs)",
		r.LookupCPUP50us, r.LookupCPUP99us, r.LookupCPUP999us, r.CPUBaselineus, r.LookupP50us, r.LookupP99us, r.LookupP999us,
		100*r.SwitchedFrac, r.QuietWallP50us, r.QuietWallP99us, r.QuietWallP999us, r.QuietCPUP99us)
}

// stallText states a stall probe's findings and the share of lookups of
// the median wall time p50 (µs) they should hit.
func stallText(s Stalls, p50 float64) string {
	return fmt.Sprintf("a %.0f ms probe before the replay saw the machine stall a spinning thread, not switching it out, %.0f times/s for >= %v (median %.1f µs, p90 %.1f µs, %.1f%% of the time; "+
		"and %.0f times/s switch it out); a lookup of the median wall time %.2f µs overlaps a stall with probability ~%.2f%%, and where that nears or passes 1%% the p99 is a stall's length, not the index's",
		s.ProbeMS, s.PerSec, MinStall, s.P50us, s.P90us, 100*s.LostFrac, s.SwitchedPerSec, p50, 100*s.HitFrac(p50))
}

func safeText(r Result, shards int) string {
	return fmt.Sprintf("safe-mode lookups %d begun during a write + %d redone after overlapping one = %.2f%% of %d index lookups (%d lookups x %d shards)",
		r.SafeStarted, r.SafeRedone, 100*safeFrac(r, shards), r.Lookups*max(shards, 1), r.Lookups, max(shards, 1))
}

func flags(r Result) string {
	var f []string
	if !r.Valid {
		f = append(f, "INVALID: "+r.Invalid)
	}
	if r.WindowMS > 0 && !r.Tracking {
		f = append(f, "not tracking offered")
	}
	return strings.Join(f, ", ")
}

// si formats a rate with an SI suffix: 1.23M, 456K.
func si(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1e9:
		return fmt.Sprintf("%.2fG", v/1e9)
	case a >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case a >= 1e3:
		return fmt.Sprintf("%.1fK", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}
