package sim

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/router"
	"github.com/kvrouter/kvrouter/trace"
)

// writeStudyTrace writes a small multi-turn trace: 6 conversations of 4
// turns sharing a system prompt.
func writeStudyTrace(t *testing.T) string {
	t.Helper()
	var recs []trace.Record
	for turn := range 4 {
		for c := range 6 {
			ids := []uint64{0}
			for k := range turn + 1 {
				ids = append(ids, uint64(1000*(c+1)+k))
			}
			recs = append(recs, trace.Record{
				Timestamp:    time.Duration(turn)*time.Second + time.Duration(c)*50*time.Millisecond,
				InputLength:  len(ids)*512 - 10,
				OutputLength: 20,
				HashIDs:      ids,
			})
		}
	}
	p := filepath.Join(t.TempDir(), "trace.jsonl")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := trace.Write(f, recs); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}

// testStudy is a study of tr on 2 workers of 512 blocks (every policy
// when none is named), as `sim --trace tr --workers 2 --num-blocks 512`.
func testStudy(tr string, policies ...Policy) Study {
	cfg := DefaultConfig()
	cfg.Workers, cfg.Engine.NumBlocks = 2, 512
	if len(policies) > 0 {
		cfg.Policies = policies
	}
	return Study{Config: cfg, Traces: []string{tr}, CapacityPolicy: string(PolicyRoundRobin)}
}

// run runs s and returns its stdout and stderr.
func (s Study) run(t *testing.T) (string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	if err := s.Run(context.Background(), &out, &errOut, nil); err != nil {
		t.Fatalf("study %+v: %v\n%s", s, err, errOut.String())
	}
	return out.String(), errOut.String()
}

func TestSimTableAndOutputs(t *testing.T) {
	tr := writeStudyTrace(t)
	dir := t.TempDir()
	s := testStudy(tr)
	s.OutDir = dir
	// Charts stands in for internal/charts.WriteSim (which imports this
	// package): one file per report, in the directory it is given.
	s.Charts = func(rep *Report, d, suffix string) error {
		return os.WriteFile(filepath.Join(d, "charts"+suffix+".txt"), []byte(fmt.Sprint(len(rep.Policies))), 0o644)
	}
	out, _ := s.run(t)
	for _, want := range []string{"bounds:", "policy", "approx", "round-robin", "random", "cache-aware", "/pooled"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	for _, f := range []string{"sim.csv", "charts.txt"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	s = testStudy(tr, PolicyKV, PolicyRoundRobin)
	s.JSON, s.Config.RateScale = true, 2
	js, _ := s.run(t)
	var rep struct {
		RateScale float64 `json:"rate_scale"`
		Policies  []struct {
			Policy    string `json:"policy"`
			Completed int    `json:"completed"`
		} `json:"policies"`
	}
	if err := json.Unmarshal([]byte(js), &rep); err != nil {
		t.Fatalf("%v\n%s", err, js)
	}
	if rep.RateScale != 2 || len(rep.Policies) != 2 || rep.Policies[0].Policy != "kv" || rep.Policies[1].Completed != 24 {
		t.Errorf("json report %+v", rep)
	}
}

func TestSimLoads(t *testing.T) {
	s := testStudy(writeStudyTrace(t), PolicyKV, PolicyRoundRobin)
	s.Loads, s.Full = []float64{0.5, 0.9}, true
	out, _ := s.run(t)
	for _, want := range []string{"capacity (round-robin, 2 workers)", "50% load: --rate-scale", "== trace, 90% of capacity ==",
		"trace trace", "verdict trace @50%:", "verdict trace @90%:", "hit/pooled"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// Several traces (shipped ones by name, from any directory: they are
// embedded); with JSON, stdout carries the JSON alone.
func TestSimTracesJSON(t *testing.T) {
	tr := writeStudyTrace(t)
	s := testStudy(tr, PolicyKV, PolicyRoundRobin)
	s.Traces = []string{"synth", tr}
	s.Config.Limit, s.Config.Engine.NumBlocks = 120, 2048
	rc, err := router.Preset("dynamo")
	if err != nil {
		t.Fatal(err)
	}
	s.Config.Router.Selector, s.Config.Router.Predict = rc.Selector, rc.Predict
	s.Config.Router.Selector.OverlapCredit = 2
	s.Loads, s.JSON, s.Preset = []float64{0.7}, true, "dynamo"
	js, _ := s.run(t)
	var rep struct {
		Preset string `json:"preset"`
		Traces []struct {
			Trace   string `json:"trace"`
			Reports []struct {
				Policies []struct {
					Policy string `json:"policy"`
				} `json:"policies"`
			} `json:"reports"`
		} `json:"traces"`
		Verdicts []struct {
			Trace string  `json:"trace"`
			Load  float64 `json:"load"`
		} `json:"verdicts"`
	}
	if err := json.Unmarshal([]byte(js), &rep); err != nil {
		t.Fatalf("stdout is not JSON alone: %v\n%s", err, js)
	}
	if rep.Preset != "dynamo" || len(rep.Traces) != 2 || rep.Traces[0].Trace != "synth" || rep.Traces[1].Trace != "trace" ||
		len(rep.Verdicts) != 2 || rep.Verdicts[1].Load != 0.7 || len(rep.Traces[0].Reports[0].Policies) != 2 {
		t.Errorf("json %+v", rep)
	}
}

// DumpPath gets one JSON line per completed request, policy, load and
// trace, each labelled with its run; the second trace appends.
func TestSimDumpRequests(t *testing.T) {
	tr := writeStudyTrace(t)
	dump := filepath.Join(t.TempDir(), "requests.jsonl")
	s := testStudy(tr, PolicyKV, PolicyRoundRobin)
	s.Traces, s.Loads, s.DumpPath = []string{tr, tr}, []float64{0.5, 0.9}, dump
	s.run(t)
	f, err := os.Open(dump)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type key struct {
		policy string
		load   float64
	}
	count := map[key]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var row struct {
			Run struct {
				Trace string  `json:"trace"`
				Load  float64 `json:"load"`
			} `json:"run"`
			Policy string  `json:"policy"`
			TTFT   float64 `json:"ttft_ms"`
		}
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			t.Fatalf("%v: %s", err, sc.Text())
		}
		if row.Run.Trace != "trace" || row.TTFT <= 0 {
			t.Errorf("row %s", sc.Text())
		}
		count[key{row.Policy, row.Run.Load}]++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	// 24 requests, twice (two traces), per policy and load.
	for _, k := range []key{{"kv", 0.5}, {"kv", 0.9}, {"round-robin", 0.5}, {"round-robin", 0.9}} {
		if count[k] != 48 {
			t.Errorf("%v: %d rows, want 48 (all %v)", k, count[k], count)
		}
	}
}

type seedsTTFT struct {
	Policy string `json:"policy"`
	TTFT   struct {
		P50 float64 `json:"p50_ms"`
		P99 float64 `json:"p99_ms"`
	} `json:"ttft"`
}

// singleSeedOut is the part of a one-seed study's JSON the tests
// compare: each policy's TTFT per report.
type singleSeedOut struct {
	Traces []struct {
		Reports []struct {
			Policies []seedsTTFT `json:"policies"`
		} `json:"reports"`
	} `json:"traces"`
}

// Seeds runs each seed exactly as that seed alone would, and judges the
// means beside every seed's strict verdict.
func TestSimSeeds(t *testing.T) {
	base := testStudy(writeStudyTrace(t), PolicyKV, PolicyRandom)
	base.Loads = []float64{0.7}
	s := base
	s.JSON, s.Seeds = true, []uint64{1, 2}
	js, _ := s.run(t)
	var got struct {
		Seeds  []uint64 `json:"seeds"`
		Traces []struct {
			Runs []struct {
				Reports []struct {
					Seed     uint64      `json:"seed"`
					Policies []seedsTTFT `json:"policies"`
				} `json:"reports"`
			} `json:"runs"`
		} `json:"traces"`
		Verdicts []struct {
			Result string `json:"result"`
			Strict []any  `json:"strict"`
		} `json:"seed_verdicts"`
	}
	if err := json.Unmarshal([]byte(js), &got); err != nil {
		t.Fatalf("stdout is not JSON alone: %v\n%s", err, js)
	}
	if len(got.Seeds) != 2 || len(got.Traces) != 1 || len(got.Traces[0].Runs) != 2 || len(got.Verdicts) != 1 ||
		len(got.Verdicts[0].Strict) != 2 || got.Verdicts[0].Result == "" {
		t.Fatalf("json %+v", got)
	}
	for i, seed := range []uint64{1, 2} {
		one := base
		one.JSON, one.Config.Seed = true, seed
		var alone singleSeedOut
		js, _ := one.run(t)
		if err := json.Unmarshal([]byte(js), &alone); err != nil {
			t.Fatal(err)
		}
		run := got.Traces[0].Runs[i].Reports[0]
		if run.Policies[0].TTFT.P50 <= 0 {
			t.Fatalf("seed %d: no TTFT decoded: %+v", seed, run.Policies)
		}
		if a, b := run.Policies, alone.Traces[0].Reports[0].Policies; len(a) != 2 || a[0] != b[0] || a[1] != b[1] || run.Seed != got.Seeds[i] {
			t.Errorf("seed %d: seeds run %+v, seed run %+v", seed, a, b)
		}
	}
	s.JSON = false
	text, _ := s.run(t)
	for _, want := range []string{"seeds 1,2", "seed verdict trace @70%:", "strict verdicts (every seed judged alone): seed 1:"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
}

func TestSimSeedsErrors(t *testing.T) {
	for _, bad := range []string{"1", "1,1", "1,x", ""} {
		if _, err := ParseSeeds(bad); err == nil {
			t.Errorf("seeds %q accepted", bad)
		}
	}
	tr := writeStudyTrace(t)
	for name, edit := range map[string]func(*Study){
		"no loads": func(s *Study) { s.Loads = nil },
		"jitter":   func(s *Study) { s.LoadJitter = -0.1 },
		"jitter 1": func(s *Study) { s.LoadJitter = 1 },
		"out":      func(s *Study) { s.OutDir = t.TempDir() },
		"dump":     func(s *Study) { s.DumpPath = filepath.Join(t.TempDir(), "d") },
		"one seed": func(s *Study) { s.Seeds = s.Seeds[:1] },
	} {
		s := testStudy(tr, PolicyKV, PolicyRandom)
		s.Seeds, s.Loads = []uint64{1, 2}, []float64{0.7}
		edit(&s)
		if err := s.Run(context.Background(), &bytes.Buffer{}, &bytes.Buffer{}, nil); err == nil {
			t.Errorf("%s accepted", name)
		}
	}
}

// LoadJitter moves each seed's rate by a printed capacity scale, and that
// scale with the seed alone reproduces the run.
func TestSimSeedsJitter(t *testing.T) {
	base := testStudy(writeStudyTrace(t), PolicyKV, PolicyRandom)
	base.Loads = []float64{0.7}
	s := base
	s.Seeds, s.LoadJitter, s.JSON = []uint64{1, 2, 3}, 0.01, true
	out, errOut := s.run(t)
	var got struct {
		Traces []struct {
			Capacity struct {
				RateScale float64 `json:"rate_scale"`
			} `json:"capacity"`
			Runs []struct {
				Reports []struct {
					RateScale float64     `json:"rate_scale"`
					Policies  []seedsTTFT `json:"policies"`
				} `json:"reports"`
			} `json:"runs"`
		} `json:"traces"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	runs, c := got.Traces[0].Runs, got.Traces[0].Capacity.RateScale
	for i, d := range []float64{-1, 0, 1} {
		want := 0.7 * c * (1 + 0.01*d)
		if r := runs[i].Reports[0].RateScale; math.Abs(r-want) > 1e-9*want {
			t.Errorf("seed %d: rate scale %v, want %v", i+1, r, want)
		}
	}
	line := ""
	for _, l := range strings.Split(errOut, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "seed 3: --capacity-rate-scale ") {
			line = strings.TrimPrefix(strings.TrimSpace(l), "seed 3: --capacity-rate-scale ")
		}
	}
	if line == "" {
		t.Fatalf("no capacity scale for seed 3 in:\n%s", errOut)
	}
	one := base
	one.Config.Seed, one.JSON = 3, true
	var err error
	if one.CapacityScale, err = strconv.ParseFloat(line, 64); err != nil {
		t.Fatal(err)
	}
	js, _ := one.run(t)
	var alone singleSeedOut
	if err := json.Unmarshal([]byte(js), &alone); err != nil {
		t.Fatal(err)
	}
	if a, b := runs[2].Reports[0].Policies, alone.Traces[0].Reports[0].Policies; a[0] != b[0] || a[1] != b[1] {
		t.Errorf("seed 3 with jitter %+v, alone %+v", a, b)
	}
}

func TestParseLoads(t *testing.T) {
	if got, err := ParseLoads("0.5, 0.9,"); err != nil || len(got) != 2 || got[1] != 0.9 {
		t.Errorf("ParseLoads: %v %v", got, err)
	}
	for _, bad := range []string{"0", "-1", "x", "NaN"} {
		if _, err := ParseLoads(bad); err == nil {
			t.Errorf("loads %q accepted", bad)
		}
	}
}
