package indexer_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/kvrouter/kvrouter/indexer"
	"github.com/kvrouter/kvrouter/indexer/indexertest"
	"github.com/kvrouter/kvrouter/kvevents"
)

// TestApprox runs testdata/approx scripts:
//
//	new [ttl=DUR] [max-blocks=N] [prune=F]
//	insert worker=N [rank=R] locals=(L,...) t=DUR     (time since an epoch)
//	match locals=(L,...) t=DUR
//	remove-worker worker=N
//	stats
func TestApprox(t *testing.T) {
	epoch := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	datadriven.Walk(t, "testdata/approx", func(t *testing.T, path string) {
		a := indexer.NewApprox(indexer.ApproxConfig{})
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			at := func() time.Time {
				var s string
				d.ScanArgs(t, "t", &s)
				dur, err := time.ParseDuration(s)
				if err != nil {
					d.Fatalf(t, "t: %v", err)
				}
				return epoch.Add(dur)
			}
			locals := func() []uint64 {
				arg, _ := d.Arg("locals")
				var out []uint64
				for _, v := range arg.Vals {
					x, err := strconv.ParseUint(v, 16, 64)
					if err != nil {
						d.Fatalf(t, "locals: %v", err)
					}
					out = append(out, x)
				}
				return out
			}
			switch d.Cmd {
			case "new":
				var cfg indexer.ApproxConfig
				if d.HasArg("ttl") {
					var s string
					d.ScanArgs(t, "ttl", &s)
					ttl, err := time.ParseDuration(s)
					if err != nil {
						d.Fatalf(t, "ttl: %v", err)
					}
					cfg.TTL = ttl
				}
				if d.HasArg("max-blocks") {
					d.ScanArgs(t, "max-blocks", &cfg.MaxBlocks)
				}
				if d.HasArg("prune") {
					d.ScanArgs(t, "prune", &cfg.PruneFraction)
				}
				a = indexer.NewApprox(cfg)
				return "ok"
			case "insert":
				var w kvevents.Worker
				d.ScanArgs(t, "worker", &w.ID)
				if d.HasArg("rank") {
					d.ScanArgs(t, "rank", &w.Rank)
				}
				a.Insert(w, locals(), at())
				return "ok"
			case "match":
				return indexertest.FormatOverlaps(a.FindMatches(locals(), at()))
			case "remove-worker":
				var id uint64
				d.ScanArgs(t, "worker", &id)
				a.RemoveWorker(id)
				return "ok"
			case "stats":
				s := a.Stats()
				return fmt.Sprintf("blocks=%d nodes=%d workers=%d expired=%d pruned=%d", s.Blocks, s.Nodes, s.Workers, s.Expired, s.Pruned)
			}
			d.Fatalf(t, "unknown command %q", d.Cmd)
			return ""
		})
	})
}
