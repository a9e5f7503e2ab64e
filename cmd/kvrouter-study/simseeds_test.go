package main

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
)

type seedsTTFT struct {
	Policy string `json:"policy"`
	TTFT   struct {
		P50 float64 `json:"p50_ms"`
		P99 float64 `json:"p99_ms"`
	} `json:"ttft_ms"`
}

// --seeds runs each seed exactly as --seed alone would, and judges the
// means beside every seed's strict verdict.

// singleSeedOut is the part of a one-seed `sim --json` the tests compare:
// each policy's TTFT per report.
type singleSeedOut struct {
	Traces []struct {
		Reports []struct {
			Policies []seedsTTFT `json:"policies"`
		} `json:"reports"`
	} `json:"traces"`
}

func TestSimSeeds(t *testing.T) {
	tr := writeSimTestTrace(t)
	args := []string{"--trace", tr, "--workers", "2", "--num-blocks", "512", "--quiet", "--policies", "kv,random", "--loads", "0.7", "--json"}
	js := runSimCmd(t, append(args, "--seeds", "1,2")...)
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
	for i, seed := range []string{"1", "2"} {
		var one singleSeedOut
		if err := json.Unmarshal([]byte(runSimCmd(t, append(args, "--seed", seed)...)), &one); err != nil {
			t.Fatal(err)
		}
		run := got.Traces[0].Runs[i].Reports[0]
		if a, b := run.Policies, one.Traces[0].Reports[0].Policies; len(a) != 2 || a[0] != b[0] || a[1] != b[1] || run.Seed != got.Seeds[i] {
			t.Errorf("seed %s: --seeds run %+v, --seed run %+v", seed, a, b)
		}
	}
	text := runSimCmd(t, "--trace", tr, "--workers", "2", "--num-blocks", "512", "--quiet", "--policies", "kv,random", "--loads", "0.7", "--seeds", "1,2")
	for _, want := range []string{"seeds 1,2", "seed verdict trace @70%:", "strict verdicts (every seed judged alone): seed 1:"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
}

func TestSimSeedsErrors(t *testing.T) {
	tr := writeSimTestTrace(t)
	for _, bad := range [][]string{
		{"--seeds", "1"},                     // one seed
		{"--seeds", "1,1", "--loads", "0.7"}, // twice
		{"--seeds", "1,x", "--loads", "0.7"},
		{"--seeds", "1,2"}, // no --loads
		{"--seeds", "1,2", "--loads", "0.7", "--seed", "3"},
		{"--seeds", "1,2", "--loads", "0.7", "--load-jitter", "-0.1"},
	} {
		root := newRootCmd()
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&out)
		root.SetArgs(append([]string{"sim", "--trace", tr, "--workers", "2", "--quiet", "--policies", "kv,random"}, bad...))
		if err := root.Execute(); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

// --load-jitter moves each seed's rate by a printed capacity scale, and
// that scale with --seed reproduces the run.
func TestSimSeedsJitter(t *testing.T) {
	tr := writeSimTestTrace(t)
	args := []string{"--trace", tr, "--workers", "2", "--num-blocks", "512", "--quiet", "--policies", "kv,random", "--loads", "0.7"}
	root := newRootCmd()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(append([]string{"sim", "--seeds", "1,2,3", "--load-jitter", "0.01", "--json"}, args...))
	if err := root.Execute(); err != nil {
		t.Fatal(err, errOut.String())
	}
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
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
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
	for _, l := range strings.Split(errOut.String(), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "seed 3: --capacity-rate-scale ") {
			line = strings.TrimPrefix(strings.TrimSpace(l), "seed 3: --capacity-rate-scale ")
		}
	}
	if line == "" {
		t.Fatalf("no capacity scale for seed 3 in:\n%s", errOut.String())
	}
	var one singleSeedOut
	js := runSimCmd(t, append(args, "--seed", "3", "--capacity-rate-scale", line, "--json")...)
	if err := json.Unmarshal([]byte(js), &one); err != nil {
		t.Fatal(err)
	}
	if a, b := runs[2].Reports[0].Policies, one.Traces[0].Reports[0].Policies; a[0] != b[0] || a[1] != b[1] {
		t.Errorf("seed 3 with jitter %+v, alone %+v", a, b)
	}
}
