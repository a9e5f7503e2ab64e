package mocker

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/kvrouter/kvrouter/kvevents"
)

// parseTokens parses token specs: "5" (one token), "1-8" (a range,
// inclusive), "7x64" (token 7 repeated 64 times).
func parseTokens(t testing.TB, vals []string) []uint32 {
	var out []uint32
	for _, v := range vals {
		for _, part := range strings.Split(v, ",") {
			part = strings.TrimSpace(part)
			switch {
			case part == "":
			case strings.Contains(part, "-"):
				a, b, _ := strings.Cut(part, "-")
				lo, err1 := strconv.Atoi(a)
				hi, err2 := strconv.Atoi(b)
				if err1 != nil || err2 != nil || hi < lo {
					t.Fatalf("bad token range %q", part)
				}
				for x := lo; x <= hi; x++ {
					out = append(out, uint32(x))
				}
			case strings.Contains(part, "x"):
				a, b, _ := strings.Cut(part, "x")
				tok, err1 := strconv.Atoi(a)
				n, err2 := strconv.Atoi(b)
				if err1 != nil || err2 != nil {
					t.Fatalf("bad token repeat %q", part)
				}
				for range n {
					out = append(out, uint32(tok))
				}
			default:
				x, err := strconv.Atoi(part)
				if err != nil {
					t.Fatalf("bad token %q", part)
				}
				out = append(out, uint32(x))
			}
		}
	}
	return out
}

func formatStep(b *strings.Builder, r *StepResult) {
	if r.Idle {
		fmt.Fprintf(b, "pass start=%v idle\n", r.Start)
	} else {
		fmt.Fprintf(b, "pass start=%v dur=%v prefill=%d decodes=%d usage=%.3f\n",
			r.Start, r.Duration, r.PrefillTokens, r.Decodes, r.Usage)
	}
	for i := range r.Events {
		fmt.Fprintf(b, "  event %s\n", FormatEvent(&r.Events[i]))
	}
	for _, id := range r.Preempted {
		fmt.Fprintf(b, "  preempted r%d\n", id)
	}
	for _, id := range r.Pulled {
		fmt.Fprintf(b, "  pulled r%d\n", id)
	}
	if len(r.Outputs) > 0 {
		b.WriteString("  tokens:")
		for _, o := range r.Outputs {
			fmt.Fprintf(b, " r%d#%d", o.ID, o.Index)
			if o.First {
				b.WriteString("(first)")
			}
			if o.Finished {
				b.WriteString("(last)")
			}
		}
		b.WriteByte('\n')
	}
	for _, f := range r.Finished {
		fmt.Fprintf(b, "  finished %s\n", formatResult(&f))
	}
}

func formatResult(f *Result) string {
	if f.TransferredTokens > 0 {
		return fmt.Sprintf("r%d ttft=%v out=%d prompt=%d cached=%d (transferred=%d) computed=%d cancelled=%t",
			f.ID, f.TTFT, f.OutputTokens, f.PromptTokens, f.CachedTokens, f.TransferredTokens, f.ComputedTokens, f.Cancelled)
	}
	if f.TierCachedTokens != [kvevents.NumTiers]int{f.CachedTokens} {
		return fmt.Sprintf("r%d ttft=%v out=%d prompt=%d cached=%d (device=%d host=%d disk=%d shared=%d) computed=%d cancelled=%t",
			f.ID, f.TTFT, f.OutputTokens, f.PromptTokens, f.CachedTokens, f.TierCachedTokens[0], f.TierCachedTokens[1],
			f.TierCachedTokens[2], f.TierCachedTokens[3], f.ComputedTokens, f.Cancelled)
	}
	return fmt.Sprintf("r%d ttft=%v itl-sum=%v itl-max=%v out=%d prompt=%d cached=%d computed=%d recomputed=%d preemptions=%d cancelled=%t",
		f.ID, f.TTFT, f.ITLSum, f.ITLMax, f.OutputTokens, f.PromptTokens, f.CachedTokens, f.ComputedTokens,
		f.RecomputedTokens, f.Preemptions, f.Cancelled)
}

func TestDataDriven(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		var e *Engine
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "config":
				cfg := DefaultConfig()
				cfg.SpeedupRatio = 1
				d.MaybeScanArgs(t, "blocks", &cfg.NumBlocks)
				d.MaybeScanArgs(t, "block-size", &cfg.BlockSize)
				d.MaybeScanArgs(t, "max-seqs", &cfg.MaxNumSeqs)
				d.MaybeScanArgs(t, "max-tokens", &cfg.MaxNumBatchedTokens)
				d.MaybeScanArgs(t, "watermark", &cfg.Watermark)
				d.MaybeScanArgs(t, "caching", &cfg.EnablePrefixCaching)
				d.MaybeScanArgs(t, "speedup", &cfg.SpeedupRatio)
				d.MaybeScanArgs(t, "xfer-bw", &cfg.KVTransfer.Bandwidth)
				var xlat, hold string
				if d.MaybeScanArgs(t, "xfer-lat", &xlat) {
					cfg.KVTransfer.Latency, _ = time.ParseDuration(xlat)
				}
				if d.MaybeScanArgs(t, "hold-timeout", &hold) {
					cfg.HoldTimeout, _ = time.ParseDuration(hold)
				}
				scanTiers(t, d, &cfg.Tiers)
				var kind string
				if d.MaybeScanArgs(t, "hybrid", &kind) {
					cfg.Hybrid.Kind = HybridKind(kind)
				}
				d.MaybeScanArgs(t, "window", &cfg.Hybrid.Window)
				d.MaybeScanArgs(t, "interval", &cfg.Hybrid.StateInterval)
				d.MaybeScanArgs(t, "group-fraction", &cfg.Hybrid.GroupFraction)
				if err := cfg.Validate(); err != nil {
					return "error: " + err.Error()
				}
				e = New(cfg)
				if cfg.Hybrid.Enabled() {
					h := e.hybrid
					return fmt.Sprintf("blocks=%d block-size=%d max-tokens=%d group=%s group-blocks=%d interval=%d",
						cfg.NumBlocks, cfg.BlockSize, cfg.MaxNumBatchedTokens, h.Group(), len(e.gpool.blocks), h.StateInterval)
				}
				if cfg.Tiers.enabled() {
					e.TraceOffload(true)
					return fmt.Sprintf("blocks=%d block-size=%d host=%d disk=%d shared=%t write-through=%t min-reuse=%d",
						cfg.NumBlocks, cfg.BlockSize, cfg.Tiers.HostBlocks, cfg.Tiers.DiskBlocks, cfg.Tiers.Shared != nil,
						cfg.Tiers.WriteThrough, cfg.Tiers.MinReuse)
				}
				return fmt.Sprintf("blocks=%d block-size=%d max-seqs=%d max-tokens=%d watermark-blocks=%d caching=%t",
					cfg.NumBlocks, cfg.BlockSize, cfg.MaxNumSeqs, cfg.MaxNumBatchedTokens, cfg.watermarkBlocks(), cfg.EnablePrefixCaching)
			case "add":
				var req Request
				d.ScanArgs(t, "id", &req.ID)
				arg, ok := d.Arg("tokens")
				if !ok {
					d.Fatalf(t, "add needs tokens=")
				}
				req.Tokens = parseTokens(t, arg.Vals)
				req.MaxOutputTokens = 1
				d.MaybeScanArgs(t, "out", &req.MaxOutputTokens)
				d.MaybeScanArgs(t, "hold", &req.Hold)
				d.MaybeScanArgs(t, "remote", &req.RemoteBlocks)
				var at string
				if d.MaybeScanArgs(t, "at", &at) {
					dur, err := time.ParseDuration(at)
					if err != nil {
						d.Fatalf(t, "bad at: %v", err)
					}
					req.Arrival = dur
				}
				if err := e.Add(req); err != nil {
					return "error: " + err.Error()
				}
				return fmt.Sprintf("r%d: %d prompt tokens", req.ID, len(req.Tokens))
			case "step":
				n := 1
				d.MaybeScanArgs(t, "n", &n)
				var b strings.Builder
				for range n {
					now := e.Now()
					var at string
					if d.MaybeScanArgs(t, "now", &at) {
						dur, err := time.ParseDuration(at)
						if err != nil {
							d.Fatalf(t, "bad now: %v", err)
						}
						now = dur
					}
					r := e.Step(now)
					formatStep(&b, &r)
					b.WriteString(e.PipelineString())
				}
				if !d.HasArg("quiet") {
					b.WriteString(e.String())
				}
				return b.String()
			case "run":
				// Step until idle, printing only events, preemptions and
				// finishes.
				var b strings.Builder
				for i := 0; e.Busy(); i++ {
					if i > 10000 {
						d.Fatalf(t, "engine does not drain")
					}
					r := e.Step(e.Now())
					for j := range r.Events {
						fmt.Fprintf(&b, "event %s\n", FormatEvent(&r.Events[j]))
					}
					for _, id := range r.Preempted {
						fmt.Fprintf(&b, "preempted r%d\n", id)
					}
					for _, f := range r.Finished {
						fmt.Fprintf(&b, "finished %s\n", formatResult(&f))
					}
				}
				b.WriteString(e.String())
				return b.String()
			case "cancel":
				var id uint64
				d.ScanArgs(t, "id", &id)
				res, ok := e.Cancel(id)
				if !ok {
					return "unknown request\n" + e.String()
				}
				return formatResult(&res) + "\n" + e.String()
			case "release":
				var id uint64
				d.ScanArgs(t, "id", &id)
				return fmt.Sprintf("released=%t\n%s", e.Release(id), e.String())
			case "expire":
				var at string
				d.ScanArgs(t, "now", &at)
				now, err := time.ParseDuration(at)
				if err != nil {
					d.Fatalf(t, "bad now: %v", err)
				}
				return fmt.Sprintf("expired %v\n%s", e.ExpireHolds(now), e.String())
			case "state":
				return e.String()
			case "advance":
				// Run the offload pipeline (no pass) to now=.
				var at string
				d.ScanArgs(t, "now", &at)
				dur, err := time.ParseDuration(at)
				if err != nil {
					d.Fatalf(t, "bad now: %v", err)
				}
				var b strings.Builder
				for _, ev := range e.Advance(dur) {
					fmt.Fprintf(&b, "event %s\n", FormatEvent(&ev))
				}
				b.WriteString(e.PipelineString())
				return b.String()
			default:
				d.Fatalf(t, "unknown command %q", d.Cmd)
				return ""
			}
		})
	})
}

// scanTiers reads the tier arguments of a datadriven config: host=, disk=
// and shared= capacities in blocks, link-bw= (bytes/s, every link),
// link-lat=, block-bytes=, write-through, min-reuse=, flush-after=.
func scanTiers(t *testing.T, d *datadriven.TestData, tc *TierConfig) {
	d.MaybeScanArgs(t, "host", &tc.HostBlocks)
	d.MaybeScanArgs(t, "disk", &tc.DiskBlocks)
	var shared int
	if d.MaybeScanArgs(t, "shared", &shared) {
		tc.Shared = NewSharedStore(SharedConfig{Blocks: shared, Worker: kvevents.Worker{ID: 99}})
	}
	d.MaybeScanArgs(t, "block-bytes", &tc.BlockBytes)
	d.MaybeScanArgs(t, "min-reuse", &tc.MinReuse)
	d.MaybeScanArgs(t, "flush-blocks", &tc.FlushBlocks)
	tc.WriteThrough = d.HasArg("write-through")
	var bw float64
	if d.MaybeScanArgs(t, "link-bw", &bw) {
		lat := time.Duration(0)
		var s string
		if d.MaybeScanArgs(t, "link-lat", &s) {
			var err error
			if lat, err = time.ParseDuration(s); err != nil {
				d.Fatalf(t, "bad link-lat: %v", err)
			}
		}
		tc.HostLink = Link{Bandwidth: bw, Latency: lat}
		tc.DiskLink = tc.HostLink
		if tc.Shared != nil {
			tc.Shared.link = tc.HostLink
		}
	}
	var fa string
	if d.MaybeScanArgs(t, "flush-after", &fa) {
		v, err := time.ParseDuration(fa)
		if err != nil {
			d.Fatalf(t, "bad flush-after: %v", err)
		}
		tc.FlushAfter = v
	}
}
