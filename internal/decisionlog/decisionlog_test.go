package decisionlog

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/router"
	"github.com/kvrouter/kvrouter/selector"
)

var update = flag.Bool("update", false, "rewrite golden files")

func decision(id string) *router.Decision {
	return &router.Decision{RequestID: id, Inputs: &router.Inputs{}, Worker: kvevents.Worker{ID: 2}, Blocks: 10, ISL: 160,
		CachedTokens: 128, Cost: 4.5, Candidates: []selector.Breakdown{
			{Worker: kvevents.Worker{ID: 1}, Overlap: [kvevents.NumTiers]int{2}, Credit: 2, Decay: 1, Prefill: 8, Decode: 3, Cost: 11},
			{Worker: kvevents.Worker{ID: 2}, Overlap: [kvevents.NumTiers]int{8}, Credit: 8, Decay: 1, Prefill: 2, Decode: 2.5, Cost: 4.5, Prob: 1},
			{Worker: kvevents.Worker{ID: 3, Rank: 1}, Out: selector.ReasonBusy},
			{Worker: kvevents.Worker{ID: 4}, Overlap: [kvevents.NumTiers]int{0, 4}, Credit: 3, Decay: 0.5, Prefill: 7, Decode: 1, Onboard: 0.25, Cost: 8},
		}}
}

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func TestWriterSample(t *testing.T) {
	var buf bytes.Buffer
	c := &clock{time.Unix(100, 0)}
	w := New(&buf, Config{Sample: 3, Rate: 1000}, c.now)
	n := 0
	for i := 0; i < 10; i++ {
		d := decision("r")
		if d.Inputs = w.Sample(); w.Log(d, "ok") {
			n++
		}
	}
	if n != 4 { // decisions 1, 4, 7, 10
		t.Fatalf("sample 1/3 of 10 wrote %d, want 4", n)
	}
	recs, err := Decode(&buf)
	if err != nil || len(recs) != 4 {
		t.Fatalf("decode: %d records, %v", len(recs), err)
	}
}

func TestWriterRate(t *testing.T) {
	var buf bytes.Buffer
	c := &clock{time.Unix(100, 0)}
	w := New(&buf, Config{Rate: 2}, c.now)
	got := []bool{w.Log(decision("a"), ""), w.Log(decision("b"), ""), w.Log(decision("c"), "")}
	c.t = c.t.Add(time.Second)
	got = append(got, w.Log(decision("d"), ""))
	if want := []bool{true, true, false, true}; !equal(got, want) {
		t.Fatalf("rate 2/s: %v, want %v", got, want)
	}
	if wr, dr, _ := w.Stats(); wr != 3 || dr != 1 {
		t.Fatalf("stats written=%d dropped=%d, want 3 1", wr, dr)
	}
}

func TestWriterMaxBytes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "d.jsonl")
	w, err := Open(Config{Path: path, MaxBytes: 2000, Rate: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 50; i++ {
		w.Log(decision("r"), "ok")
	}
	_ = w.Close()
	st, err := os.Stat(path)
	if err != nil || st.Size() > 2000 || st.Size() == 0 {
		t.Fatalf("size %v (err %v), want (0, 2000]", st.Size(), err)
	}
	// A second run appends within the same cap.
	w2, _ := Open(Config{Path: path, MaxBytes: 2000, Rate: 1000})
	if w2.Log(decision("r"), "ok") {
		t.Fatal("reopened writer wrote past the cap")
	}
	_ = w2.Close()
}

func TestNilWriterAndQueued(t *testing.T) {
	var w *Writer
	if w.Log(decision("r"), "") {
		t.Fatal("nil writer wrote")
	}
	var buf bytes.Buffer
	w = New(&buf, Config{}, time.Now)
	if w.Log(&router.Decision{RequestID: "q", Queued: true, Inputs: &router.Inputs{}}, "") {
		t.Fatal("queued decision logged")
	}
	if w.Log(&router.Decision{RequestID: "u"}, "") {
		t.Fatal("unsampled decision logged")
	}
	if l, err := Open(Config{}); l != nil || err != nil {
		t.Fatalf("Open without a path: %v, %v", l, err)
	}
}

func TestExplainGolden(t *testing.T) {
	var buf bytes.Buffer
	w := New(&buf, Config{}, (&clock{time.Unix(0, 0)}).now)
	w.Log(decision("other"), "ok")
	w.Log(decision("req-1"), "ok")
	raw := buf.String()
	recs, err := Decode(strings.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := Explain(&out, recs, "req-1"); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "explain.golden")
	if *update {
		_ = os.WriteFile(golden, out.Bytes(), 0o644)
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if out.String() != string(want) {
		t.Fatalf("explain:\n%s\nwant:\n%s", out.String(), want)
	}
	if err := Explain(&out, recs, "nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing id: %v, want ErrNotFound", err)
	}
}

func TestDecodeRejects(t *testing.T) {
	for _, in := range []string{`{"v":2,"id":"x"}`, `{"v":1,`, `[1]`} {
		if _, err := Decode(strings.NewReader(in + "\n")); err == nil {
			t.Errorf("Decode(%q) accepted", in)
		}
	}
}

func FuzzDecode(f *testing.F) {
	var buf bytes.Buffer
	New(&buf, Config{}, time.Now).Log(decision("seed"), "ok")
	f.Add(buf.Bytes())
	f.Add([]byte(`{"v":1,"id":"a","cands":[{"w":"1","out":"busy","overlap":[1,2,3,4]}]}` + "\n"))
	f.Add([]byte(`{"v":1,"cands":[{"overlap":[1,2,3,4,5]}]}`))
	f.Add([]byte("\n\n{\"v\":0}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, err := Decode(bytes.NewReader(data))
		if err != nil {
			return
		}
		for _, r := range recs {
			if r.V != Version {
				t.Fatalf("accepted v=%d", r.V)
			}
			var out bytes.Buffer
			if err := Explain(&out, recs, r.ID); err != nil {
				t.Fatalf("explain of a decoded record: %v", err)
			}
		}
	})
}

func equal(a, b []bool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
