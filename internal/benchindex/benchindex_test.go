package benchindex

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/kvrouter/kvrouter/kvevents"
)

func stored(w int, id uint64, n int) kvevents.Event {
	ev := kvevents.Event{WorkerID: uint64(w), EventID: id, Kind: kvevents.KindStored}
	for i := range n {
		ev.Blocks = append(ev.Blocks, kvevents.Block{Hash: id*100 + uint64(i), Local: uint64(i)})
	}
	return ev
}

func removed(w int, id uint64, hashes ...uint64) kvevents.Event {
	return kvevents.Event{WorkerID: uint64(w), EventID: id, Kind: kvevents.KindRemoved, Hashes: hashes}
}

// synthetic is a small stream with ties in time across and within workers.
func synthetic() *Stream {
	ms := time.Millisecond
	return &Stream{
		Workers: 3,
		Lookups: []Lookup{
			{At: 0, Worker: 1, Request: 0, Locals: []uint64{1, 2, 3}},
			{At: 5 * ms, Worker: 0, Request: 1, Locals: []uint64{1}},
			{At: 5 * ms, Worker: 2, Request: 2, Locals: []uint64{7, 8}},
			{At: 9 * ms, Worker: 1, Request: 3, Locals: nil},
		},
		Events: []TimedEvent{
			{At: 0, Worker: 1, Event: stored(1, 0, 3)},
			{At: 5 * ms, Worker: 1, Event: stored(1, 1, 2)},
			{At: 7 * ms, Worker: 1, Event: removed(1, 2, 100, 101)},
			{At: 5 * ms, Worker: 0, Event: stored(0, 0, 1)},
			{At: 5 * ms, Worker: 0, Event: stored(0, 1, 4)},
			{At: 10 * ms, Worker: 2, Event: stored(2, 0, 2)},
		},
	}
}

func TestMergeOrderAndTotals(t *testing.T) {
	s := synthetic()
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	tl := Merge(s)
	var got []string
	for _, e := range tl.Entries {
		k := "L"
		if e.Kind == OpEvent {
			k = "E"
		}
		got = append(got, fmt.Sprintf("%d/w%d%s%d", e.At/time.Millisecond, e.Worker, k, e.Index))
	}
	// time, then worker, then lookups before events, then index.
	want := []string{
		"0/w1L0", "0/w1E0",
		"5/w0L1", "5/w0E3", "5/w0E4", "5/w1E1", "5/w2L2",
		"7/w1E2", "9/w1L3", "10/w2E5",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("order\n got %v\nwant %v", got, want)
	}
	if tl.Span != 10*time.Millisecond || tl.Lookups != 4 || tl.Events != 6 || tl.Stored != 5 || tl.Removed != 1 {
		t.Fatalf("totals: span %v lookups %d events %d stored %d removed %d", tl.Span, tl.Lookups, tl.Events, tl.Stored, tl.Removed)
	}
	if tl.QueryBlocks != 6 || tl.StoredBlocks != 12 || tl.RemovedBlocks != 2 {
		t.Fatalf("blocks: query %d stored %d removed %d", tl.QueryBlocks, tl.StoredBlocks, tl.RemovedBlocks)
	}
	if tl.Ops() != 10 || tl.BlockOps() != 20 { // 6 requested + 12 stored + 2 removed
		t.Fatalf("ops %d block ops %d", tl.Ops(), tl.BlockOps())
	}
	// Merge must not depend on input order of equal-time events of other workers.
	s2 := synthetic()
	s2.Lookups[1], s2.Lookups[2] = s2.Lookups[2], s2.Lookups[1]
	if Merge(s2).Entries[3].Worker != 0 {
		t.Fatalf("lookup order not by worker")
	}
}

func TestStreamValidate(t *testing.T) {
	s := synthetic()
	s.Events[2].At = 4 * time.Millisecond // worker 1 goes back in time
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "backwards") {
		t.Fatalf("want backwards error, got %v", err)
	}
	s = synthetic()
	s.Events[0].Event.WorkerID = 2
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "worker_id") {
		t.Fatalf("want worker_id error, got %v", err)
	}
	s = synthetic()
	s.Lookups[0].Worker = 3
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "out of range") {
		t.Fatalf("want range error, got %v", err)
	}
}

func histOf(vals ...int64) *hdrhistogram.Histogram {
	h := hdrhistogram.New(histMin, histMax, histSig)
	for _, v := range vals {
		_ = h.RecordValue(v)
	}
	return h
}

func TestNewResultMath(t *testing.T) {
	tl := Merge(synthetic()) // 10 ops, 20 block ops, 6 events, 4 lookups
	var lat []int64
	for i := 1; i <= 1000; i++ {
		lat = append(lat, int64(i)*1000) // 1..1000 µs
	}
	s := Sample{Window: 20 * time.Millisecond, Wall: 40 * time.Millisecond, Queued: 0,
		Lookups: histOf(lat...), MatchSum: 6, Final: Final{Blocks: 10, Bytes: 640}, HeapBytes: 720}
	r := NewResult("x", tl, s)
	near := func(name string, got, want float64) {
		t.Helper()
		if d := got - want; d > want*0.002 || d < -want*0.002 {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	near("ops/s", r.OpsPerSec, 250)
	near("block ops/s", r.BlockOpsPerSec, 500)
	near("lookups/s", r.LookupsPerSec, 100)
	near("offered ops/s", r.OfferedOpsPerSec, 500)
	near("offered block ops/s", r.OfferedBlockOpsPerSec, 1000)
	near("p50", r.LookupP50us, 500)
	near("p99", r.LookupP99us, 990)
	near("p999", r.LookupP999us, 999)
	near("bytes/block", r.BytesPerBlock, 64)
	near("heap bytes/block", r.HeapPerBlock, 72)
	near("mean match", r.MeanMatch, 1.5)
	if r.Tracking {
		t.Errorf("achieved 50%% of offered marked tracking")
	}
	if !r.Valid {
		t.Errorf("valid run marked invalid: %s", r.Invalid)
	}
	s.Wall = 20 * time.Millisecond
	if r := NewResult("x", tl, s); !r.Tracking {
		t.Errorf("achieved == offered not tracking")
	}
	s.Window = 0
	if r := NewResult("x", tl, s); r.OfferedOpsPerSec != 0 || r.Tracking {
		t.Errorf("unpaced run: offered %v tracking %v", r.OfferedOpsPerSec, r.Tracking)
	}
}

func TestInvalidMarking(t *testing.T) {
	tl := Merge(&Stream{Workers: 1, Events: make([]TimedEvent, 100)})
	for _, c := range []struct {
		queued   int64
		rejected uint64
		valid    bool
	}{{0, 0, true}, {5, 0, true}, {6, 0, false}, {0, 1, false}, {100, 0, false}} {
		r := NewResult("x", tl, Sample{Wall: time.Second, Queued: c.queued, Final: Final{Rejected: c.rejected}})
		if r.Valid != c.valid {
			t.Errorf("queued %d rejected %d: valid %v, want %v (%s)", c.queued, c.rejected, r.Valid, c.valid, r.Invalid)
		}
		if !r.Valid && r.Invalid == "" {
			t.Errorf("invalid without a reason")
		}
	}
}

func TestSweepPlanAndBest(t *testing.T) {
	o := SweepOptions{First: 80 * time.Millisecond, Min: 10 * time.Millisecond}
	if got, want := o.Windows(), []time.Duration{80 * time.Millisecond, 40 * time.Millisecond, 20 * time.Millisecond, 10 * time.Millisecond}; !slices.Equal(got, want) {
		t.Fatalf("windows %v, want %v", got, want)
	}
	good, slow, bad := Result{Tracking: true, Valid: true}, Result{Valid: true}, Result{Tracking: true}
	n := 0
	for _, r := range []Result{good, slow, good, slow, bad} {
		n = nextBad(n, r)
	}
	if n != 2 {
		t.Fatalf("consecutive bad = %d, want 2", n)
	}
	rs := []Result{
		{BlockOpsPerSec: 1, Valid: true}, {BlockOpsPerSec: 5, Valid: true},
		{BlockOpsPerSec: 9, Valid: false}, {BlockOpsPerSec: 3, Valid: true},
	}
	if b, ok := Best(rs); !ok || b.BlockOpsPerSec != 5 {
		t.Fatalf("best %v %v", b.BlockOpsPerSec, ok)
	}
	if b, ok := Best([]Result{{BlockOpsPerSec: 2}, {BlockOpsPerSec: 4}}); ok || b.BlockOpsPerSec != 4 {
		t.Fatalf("best of invalid %v %v", b.BlockOpsPerSec, ok)
	}
}

// fakeTarget records what a replay does to it.
type fakeTarget struct {
	mu      sync.Mutex
	events  map[uint64][]uint64 // worker -> event ids in submission order
	lookups int
	started bool
	hold    bool // keep events queued until Finish
	queued  int64
}

func (f *fakeTarget) Start(_ context.Context, readers int) error {
	f.started = readers > 0
	return nil
}
func (f *fakeTarget) Submit(ev *kvevents.Event) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events[ev.WorkerID] = append(f.events[ev.WorkerID], ev.EventID)
	if f.hold {
		f.queued++
	}
	return nil
}
func (f *fakeTarget) Lookup(_, _ int, locals []uint64) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lookups++
	return len(locals)
}
func (f *fakeTarget) Queued() int64 { f.mu.Lock(); defer f.mu.Unlock(); return f.queued }
func (f *fakeTarget) Finish(context.Context) (Final, error) {
	return Final{Blocks: 4, Bytes: 400}, nil
}

func TestReplaySubmitsEverythingInWorkerOrder(t *testing.T) {
	tl := Merge(synthetic())
	for _, readers := range []int{1, 2, 3, 5} {
		for _, hold := range []bool{false, true} {
			ft := &fakeTarget{events: map[uint64][]uint64{}, hold: hold}
			f := TargetFactory{Name: "fake", New: func() (Target, error) { return ft, nil }}
			var mu sync.Mutex
			progressed := 0
			s, err := Replay(context.Background(), tl, f, ReplayOptions{Readers: readers, Progress: func(n int) {
				mu.Lock()
				progressed += n
				mu.Unlock()
			}})
			if err != nil {
				t.Fatal(err)
			}
			if !ft.started || ft.lookups != 4 || s.Lookups.TotalCount() != 4 || s.MatchSum != 6 || progressed != 10 {
				t.Fatalf("readers %d: started %v lookups %d recorded %d match %d progress %d",
					readers, ft.started, ft.lookups, s.Lookups.TotalCount(), s.MatchSum, progressed)
			}
			want := map[uint64][]uint64{0: {0, 1}, 1: {0, 1, 2}, 2: {0}}
			for w, ids := range want {
				if !slices.Equal(ft.events[w], ids) {
					t.Fatalf("readers %d: worker %d events %v, want %v", readers, w, ft.events[w], ids)
				}
			}
			r := NewResult("fake", tl, s)
			if r.Valid == hold {
				t.Fatalf("hold=%v: valid=%v (%s)", hold, r.Valid, r.Invalid)
			}
		}
	}
}

func TestReplayPacedTakesTheWindow(t *testing.T) {
	// The replay must not finish before the last entry is due: a lower
	// bound only, which no scheduler delay can break.
	tl := Merge(synthetic())
	ft := &fakeTarget{events: map[uint64][]uint64{}}
	f := TargetFactory{Name: "fake", New: func() (Target, error) { return ft, nil }}
	s, err := Replay(context.Background(), tl, f, ReplayOptions{Readers: 2, Window: 3 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if s.Wall < 3*time.Millisecond {
		t.Fatalf("paced replay took %v < window", s.Wall)
	}
}

func TestSweepEndsUnpaced(t *testing.T) {
	tl := Merge(synthetic())
	f := TargetFactory{Name: "fake", New: func() (Target, error) { return &fakeTarget{events: map[uint64][]uint64{}}, nil }}
	var seen []float64
	rs, err := Sweep(context.Background(), tl, f, SweepOptions{First: time.Millisecond, MaxSteps: 1,
		OnStep: func(r Result) { seen = append(seen, r.WindowMS) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 || rs[0].WindowMS != 1 || rs[1].WindowMS != 0 || !slices.Equal(seen, []float64{1, 0}) {
		t.Fatalf("steps %+v seen %v", rs, seen)
	}
	sus, ok := Sustained([]Result{
		{WindowMS: 8, OfferedBlockOpsPerSec: 1, Issued: true, KeptUp: true, Valid: true},
		{WindowMS: 4, OfferedBlockOpsPerSec: 4, Issued: true, KeptUp: true, Valid: true},
		{WindowMS: 2, OfferedBlockOpsPerSec: 8, Issued: true, Valid: true},
		{WindowMS: 1, OfferedBlockOpsPerSec: 16, Issued: true, KeptUp: true},
		{WindowMS: 1, OfferedBlockOpsPerSec: 16, KeptUp: true, Valid: true},
	})
	if !ok || sus.OfferedBlockOpsPerSec != 4 {
		t.Fatalf("sustained %v %v", sus.OfferedBlockOpsPerSec, ok)
	}
	if _, ok := Sustained([]Result{{OfferedBlockOpsPerSec: 2}}); ok {
		t.Fatalf("sustained without a tracking step")
	}
}

func TestCSVAndChart(t *testing.T) {
	sweep := map[string][]Result{
		"radix": {{Index: "radix", WindowMS: 10, OfferedBlockOpsPerSec: 1e6, BlockOpsPerSec: 1e6, Tracking: true, Valid: true},
			{Index: "radix", WindowMS: 5, OfferedBlockOpsPerSec: 2e6, BlockOpsPerSec: 1.2e6, Valid: true}},
		"flash": {{Index: "flash", WindowMS: 10, OfferedBlockOpsPerSec: 1e6, BlockOpsPerSec: 1e6, Tracking: true, Valid: true}},
	}
	var buf bytes.Buffer
	if err := WriteCSV(&buf, []string{"radix", "flash"}, sweep); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 4 || !slices.Equal(recs[0], csvHeader) || recs[1][0] != "radix" || recs[3][0] != "flash" || recs[2][6] != "1.2e+06" {
		t.Fatalf("csv %v", recs)
	}
	path := filepath.Join(t.TempDir(), "c.png")
	if err := WriteChart(path, "t", []string{"radix", "flash"}, sweep); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte("\x89PNG")) {
		t.Fatalf("not a PNG")
	}
	if err := WriteChart(path, "t", []string{"x"}, nil); err == nil {
		t.Fatalf("empty chart did not fail")
	}
}

func TestParseIndexesAndValidate(t *testing.T) {
	for in, want := range map[string][]string{"all": AllIndexes, "radix": {"radix"}, "flash, radix": {"flash", "radix"}, "flash,flash": {"flash"}} {
		got, err := ParseIndexes(in)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("ParseIndexes(%q) = %v, %v", in, got, err)
		}
	}
	if _, err := ParseIndexes("btree"); err == nil {
		t.Errorf("unknown index accepted")
	}
	c := DefaultConfig()
	c.Trace = "x"
	if err := c.Validate(); err != nil {
		t.Fatalf("default config invalid: %v", err)
	}
	c.Trace, c.Workers, c.Indexes = "", 0, []string{"nope"}
	err := c.Validate()
	for _, want := range []string{"trace", "workers", "nope"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: missing %q in %v", want, err)
		}
	}
}
