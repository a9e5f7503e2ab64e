package loads

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/kvrouter/kvrouter/kvevents"
)

var epoch = time.Unix(0, 0)

func at(t *testing.T, s string) time.Time {
	t.Helper()
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatal(err)
	}
	return epoch.Add(d)
}

func parseWorker(t *testing.T, s string) kvevents.Worker {
	t.Helper()
	id, rk, _ := strings.Cut(s, "/")
	n, err := strconv.ParseUint(id, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	w := kvevents.Worker{ID: n}
	if rk != "" {
		r, err := strconv.ParseUint(rk, 10, 32)
		if err != nil {
			t.Fatal(err)
		}
		w.Rank = uint32(r)
	}
	return w
}

func hashes(t *testing.T, s string) []uint64 {
	t.Helper()
	var out []uint64
	for _, f := range strings.Split(s, ",") {
		if f == "" {
			continue
		}
		n, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, n)
	}
	return out
}

func TestDataDriven(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		tr := New(DefaultConfig())
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			a := map[string]string{}
			for _, x := range d.CmdArgs {
				a[x.Key] = strings.Join(x.Vals, ",")
			}
			num := func(k string) int {
				if a[k] == "" {
					return 0
				}
				n, err := strconv.Atoi(a[k])
				if err != nil {
					t.Fatal(err)
				}
				return n
			}
			var err error
			switch d.Cmd {
			case "config":
				s, _ := time.ParseDuration(a["stale"])
				tr = New(Config{StaleAfter: s})
				return ""
			case "add":
				err = tr.Add(Entry{ID: a["id"], Worker: parseWorker(t, a["w"]), Blocks: hashes(t, a["blocks"]),
					PrefillTokens: num("prefill"), OutputBlocks: num("out"), Origin: a["origin"]}, at(t, a["t"]))
			case "prefill-done":
				err = tr.PrefillDone(a["id"], at(t, a["t"]))
			case "touch":
				err = tr.Touch(a["id"], at(t, a["t"]))
			case "free":
				err = tr.Free(a["id"])
			case "sweep":
				return fmt.Sprintf("swept %v\n%s", tr.Sweep(at(t, a["t"])), tr)
			case "remove-worker":
				return fmt.Sprintf("released %v\n%s", tr.RemoveWorker(uint64(num("id"))), tr)
			case "remove-origin":
				return fmt.Sprintf("released %v\n%s", tr.RemoveOrigin(a["origin"]), tr)
			case "breakdown":
				var b strings.Builder
				for _, wl := range tr.Breakdown() {
					fmt.Fprintln(&b, wl)
				}
				return b.String()
			case "potential":
				w := parseWorker(t, a["w"])
				seq := hashes(t, a["blocks"])
				return fmt.Sprintf("new=%d potential: %s\n", tr.NewBlocks(w, seq), tr.Potential(w, seq, num("prefill"), num("out")))
			case "pass":
				w := parseWorker(t, a["w"])
				var b strings.Builder
				b.WriteString(tr.PassOf(w).String() + "\n")
				for _, ar := range tr.PassArrivalsOf(w) {
					fmt.Fprintf(&b, "  then %d tokens at %s\n", ar.Tokens, ar.At.UTC().Format("15:04:05.000"))
				}
				return b.String()
			case "stats":
				return fmt.Sprintf("%+v\n", tr.Stats())
			default:
				t.Fatalf("unknown command %q", d.Cmd)
			}
			if err != nil {
				return "error: " + err.Error() + "\n"
			}
			return tr.String()
		})
	})
}

// A shared prefix counts once and is released only with its last holder.
func TestRefcount(t *testing.T) {
	tr := New(DefaultConfig())
	w := kvevents.Worker{ID: 1}
	now := epoch
	shared := []uint64{10, 11, 12}
	for i := range 5 {
		blocks := append(append([]uint64{}, shared...), uint64(100+i))
		if err := tr.Add(Entry{ID: fmt.Sprint("r", i), Worker: w, Blocks: blocks, PrefillTokens: 7}, now); err != nil {
			t.Fatal(err)
		}
	}
	if got := tr.Load(w); got.DecodeBlocks != 3+5 || got.PrefillTokens != 35 || got.Requests != 5 {
		t.Fatalf("after 5 adds: %s", got)
	}
	for i := range 4 {
		if err := tr.Free(fmt.Sprint("r", i)); err != nil {
			t.Fatal(err)
		}
		want := 3 + (4 - i)
		if got := tr.Load(w).DecodeBlocks; got != want {
			t.Fatalf("after freeing %d: decode %d, want %d", i+1, got, want)
		}
	}
	if n := tr.NewBlocks(w, []uint64{10, 11, 12, 104}); n != 0 {
		t.Errorf("NewBlocks of the held request = %d", n)
	}
	if n := tr.NewBlocks(w, []uint64{10, 11, 99, 98}); n != 2 {
		t.Errorf("NewBlocks of a diverging request = %d, want 2", n)
	}
	if n := tr.NewBlocks(kvevents.Worker{ID: 1, Rank: 1}, shared); n != 3 {
		t.Errorf("other rank shares nothing: NewBlocks = %d", n)
	}
	if err := tr.Free("r4"); err != nil {
		t.Fatal(err)
	}
	if got := tr.Load(w); got != (Load{}) {
		t.Fatalf("all freed but load %s", got)
	}
	if err := tr.Free("r4"); !errors.Is(err, ErrUnknownRequest) {
		t.Errorf("double free: %v", err)
	}
	if err := tr.PrefillDone("nope", now); !errors.Is(err, ErrUnknownRequest) {
		t.Errorf("unknown prefill done: %v", err)
	}
	if s := tr.Stats(); s.Added != 5 || s.Freed != 5 || s.Requests != 0 {
		t.Errorf("stats %+v", s)
	}
}

func TestAddErrors(t *testing.T) {
	tr := New(DefaultConfig())
	e := Entry{ID: "a", Worker: kvevents.Worker{ID: 1}, Blocks: []uint64{1}, PrefillTokens: 4}
	if err := tr.Add(e, epoch); err != nil {
		t.Fatal(err)
	}
	if err := tr.Add(e, epoch); !errors.Is(err, ErrDuplicateRequest) {
		t.Errorf("duplicate: %v", err)
	}
	e.ID, e.PrefillTokens = "b", -1
	if err := tr.Add(e, epoch); !errors.Is(err, ErrBadEntry) {
		t.Errorf("negative prefill: %v", err)
	}
	if got := tr.Load(kvevents.Worker{ID: 1}); got.Requests != 1 || got.PrefillTokens != 4 {
		t.Errorf("failed adds changed the load: %s", got)
	}
	if err := (Config{StaleAfter: -1}).Validate(); err == nil {
		t.Error("negative StaleAfter validated")
	}
}

// The prefix-closed binary search agrees with a linear count on random
// chains (the invariants build also cross-checks every call).
func TestNewBlocksMatchesLinear(t *testing.T) {
	tr := New(DefaultConfig())
	w := kvevents.Worker{ID: 3}
	// Requests are prefixes of one tree: node ids encode their path.
	chain := func(path []int) []uint64 {
		out := make([]uint64, len(path))
		h := uint64(0)
		for i, p := range path {
			h = h*31 + uint64(p) + 1
			out[i] = h
		}
		return out
	}
	paths := [][]int{{0, 0, 0, 0}, {0, 0, 1}, {0, 1}, {2, 2, 2, 2, 2}}
	for i, p := range paths {
		if err := tr.Add(Entry{ID: fmt.Sprint(i), Worker: w, Blocks: chain(p)}, epoch); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range [][]int{{0, 0, 0, 0, 0, 0}, {0, 0, 1, 5}, {0, 1, 1}, {1}, {2, 2, 2}, {0, 0, 2}, {}} {
		seq := chain(q)
		active := 0
		for _, h := range seq {
			if tr.holds(tr.slotOf[w], h) {
				active++
			}
		}
		if got := tr.NewBlocks(w, seq); got != len(seq)-active {
			t.Errorf("NewBlocks(%v) = %d, want %d", q, got, len(seq)-active)
		}
	}
}

// Past MaxArrivals the two oldest arrivals merge at the later moment:
// their tokens are kept, and none is placed earlier than it came.
func TestPassArrivalsBound(t *testing.T) {
	tr := New(DefaultConfig())
	w := kvevents.Worker{ID: 1}
	if err := tr.Add(Entry{ID: "first", Worker: w, Blocks: []uint64{1}, PrefillTokens: 10}, epoch); err != nil {
		t.Fatal(err)
	}
	for i := range MaxArrivals + 2 {
		at := epoch.Add(time.Duration(i+1) * time.Millisecond)
		if err := tr.Add(Entry{ID: fmt.Sprint("r", i), Worker: w, Blocks: []uint64{uint64(100 + i)}, PrefillTokens: i + 1}, at); err != nil {
			t.Fatal(err)
		}
	}
	arr := tr.PassArrivalsOf(w)
	if len(arr) != MaxArrivals {
		t.Fatalf("%d arrivals kept, want %d", len(arr), MaxArrivals)
	}
	// r0+r1+r2 (1+2+3 tokens) merged at r2's moment, 3 ms.
	if arr[0].Tokens != 6 || !arr[0].At.Equal(epoch.Add(3*time.Millisecond)) {
		t.Errorf("oldest arrival %+v, want 6 tokens at 3 ms", arr[0])
	}
	sum := 0
	for _, a := range arr {
		sum += a.Tokens
	}
	if want := (MaxArrivals + 2) * (MaxArrivals + 3) / 2; sum != want {
		t.Errorf("arrivals hold %d tokens, want %d", sum, want)
	}
	if err := tr.PrefillDone("first", epoch.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if arr := tr.PassArrivalsOf(w); len(arr) != 0 {
		t.Errorf("a first token dates a new pass, yet %d arrivals remain", len(arr))
	}
}
