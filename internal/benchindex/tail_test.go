package benchindex

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/internal/cputime"
)

// spinTarget's lookups burn spin of their thread's CPU time (read with
// the same clock the replay uses), so the recorded CPU time of every lookup
// is at least spin: if the replay bracketed anything but the lookup on its
// own thread, the bound would fail.
type spinTarget struct {
	fakeTarget
	spin time.Duration
}

func (s *spinTarget) Lookup(r, q int, locals []uint64) int {
	c0, _ := cputime.Thread()
	for {
		if c1, _ := cputime.Thread(); c1-c0 >= s.spin {
			break
		}
	}
	return s.fakeTarget.Lookup(r, q, locals)
}

func TestReplayThreadCPU(t *testing.T) {
	if !cputime.Supported {
		t.Skip("no thread CPU clock on this platform")
	}
	tl := Merge(synthetic())
	const spin = 300 * time.Microsecond
	for _, on := range []bool{false, true} {
		st := &spinTarget{fakeTarget: fakeTarget{events: map[uint64][]uint64{}}, spin: spin}
		f := TargetFactory{Name: "spin", New: func() (Target, error) { return st, nil }}
		s, err := Replay(context.Background(), tl, f, ReplayOptions{Readers: 2, ThreadCPU: on})
		if err != nil {
			t.Fatal(err)
		}
		r := NewResult("spin", tl, s)
		if !on {
			if s.LookupsCPU != nil || r.LookupCPUP50us != 0 {
				t.Fatalf("thread CPU recorded while off: %+v", r)
			}
			continue
		}
		if n := s.LookupsCPU.TotalCount(); n != 4 {
			t.Fatalf("%d lookups with a CPU time, want 4", n)
		}
		if q := s.QuietWall.TotalCount(); q+s.Switched != 4 || s.QuietCPU.TotalCount() != q {
			t.Fatalf("%d quiet (%d CPU) + %d switched lookups, want 4 in all", q, s.QuietCPU.TotalCount(), s.Switched)
		}
		if s.LookupsCPU.Min() < int64(spin) || s.CPUBaseline <= 0 {
			t.Fatalf("CPU min %v (want >= %v), baseline %v", time.Duration(s.LookupsCPU.Min()), spin, s.CPUBaseline)
		}
		if r.LookupCPUP50us < us(int64(spin)) || r.CPUBaselineus <= 0 {
			t.Fatalf("result CPU p50 %.1f µs baseline %.2f µs", r.LookupCPUP50us, r.CPUBaselineus)
		}
	}
}

func TestCutLookups(t *testing.T) {
	s := synthetic() // lookups of 3, 1, 2 and 0 blocks
	if n := s.CutLookups(0); n != 0 {
		t.Fatalf("cut 0: %d shorter", n)
	}
	if n := s.CutLookups(2); n != 2 {
		t.Fatalf("cut 2: %d shorter, want 2 (the 1- and 0-block lookups)", n)
	}
	var lens []int
	for _, l := range s.Lookups {
		lens = append(lens, len(l.Locals))
	}
	if got := Merge(s); got.QueryBlocks != 5 || lens[0] != 2 || lens[1] != 1 || lens[2] != 2 || lens[3] != 0 {
		t.Fatalf("after the cut: lengths %v, query blocks %d (want 2 1 2 0, 5)", lens, got.QueryBlocks)
	}
	if err := (Config{Trace: "x", Workers: 1, BlockSize: 64, TokensPerID: 64, LookupBlocks: -1, Indexes: AllIndexes,
		Engine: DefaultConfig().Engine}).Validate(); err == nil || !strings.Contains(err.Error(), "lookup blocks") {
		t.Fatalf("negative LookupBlocks: %v", err)
	}
}

// TestSafeLookupsReported: the target's safe-mode counts reach the result,
// and the report states their share of index lookups (one per shard).
func TestSafeLookupsReported(t *testing.T) {
	tl := Merge(synthetic()) // 4 lookups
	r := NewResult("flash", tl, Sample{Final: Final{SafeStarted: 3, SafeRedone: 1}})
	if r.SafeStarted != 3 || r.SafeRedone != 1 {
		t.Fatalf("result safe counts %d %d", r.SafeStarted, r.SafeRedone)
	}
	rep := Report{Params: Params{Shards: 2}, Results: []Result{r}}
	var b strings.Builder
	if err := rep.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	want := "safe-mode lookups 3 begun during a write + 1 redone after overlapping one = 50.00% of 8 index lookups (4 lookups x 2 shards)"
	if !strings.Contains(b.String(), want) {
		t.Fatalf("report lacks %q:\n%s", want, b.String())
	}
}
