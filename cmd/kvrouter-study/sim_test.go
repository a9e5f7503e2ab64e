package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/kvrouter/kvrouter/router"
	"github.com/kvrouter/kvrouter/selector"
	"github.com/kvrouter/kvrouter/trace"
)

// writeSimTrace writes a small multi-turn trace: 6 conversations of 4
// turns sharing a system prompt.
func writeSimTestTrace(t *testing.T) string {
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

func runSimCmd(t *testing.T, args ...string) string {
	t.Helper()
	root := newRootCmd()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(append([]string{"sim"}, args...))
	if err := root.Execute(); err != nil {
		t.Fatalf("sim %v: %v\n%s", args, err, errOut.String())
	}
	return out.String()
}

func TestSimTableAndOutputs(t *testing.T) {
	tr := writeSimTestTrace(t)
	dir := t.TempDir()
	out := runSimCmd(t, "--trace", tr, "--workers", "2", "--num-blocks", "512", "--quiet", "--out", dir)
	for _, want := range []string{"bounds:", "policy", "approx", "round-robin", "random", "cache-aware", "/pooled"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	for _, f := range []string{"sim.csv", "ttft-cdf.png", "hitrate.png"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	js := runSimCmd(t, "--trace", tr, "--workers", "2", "--num-blocks", "512", "--quiet", "--json", "--policies", "kv,round-robin", "--rate-scale", "2")
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
	tr := writeSimTestTrace(t)
	out := runSimCmd(t, "--trace", tr, "--workers", "2", "--num-blocks", "512", "--quiet", "--policies", "kv,round-robin", "--loads", "0.5,0.9", "--full")
	for _, want := range []string{"capacity (round-robin, 2 workers)", "50% load: --rate-scale", "== trace, 90% of capacity ==",
		"trace trace", "verdict trace @50%:", "verdict trace @90%:", "hit/pooled"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// --traces runs several traces (shipped ones by name, from any
// directory: they are embedded) and --json prints JSON alone on stdout.
func TestSimTracesJSON(t *testing.T) {
	tr := writeSimTestTrace(t)
	js := runSimCmd(t, "--traces", "synth,"+tr, "--limit", "120", "--workers", "2", "--num-blocks", "2048", "--quiet",
		"--policies", "kv,round-robin", "--loads", "0.7", "--json", "--preset", "dynamo", "--overlap-credit", "2")
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

// The dynamo preset sets Dynamo's block cost; an explicit flag still wins.
func TestRouterPreset(t *testing.T) {
	rc := router.DefaultConfig()
	cmd := &cobra.Command{Use: "x"}
	cmd.Flags().Float64Var(&rc.Selector.OverlapCredit, "overlap-credit", rc.Selector.OverlapCredit, "")
	cmd.Flags().DurationVar(&rc.Predict.TTL, "predict-ttl", rc.Predict.TTL, "")
	if err := cmd.ParseFlags([]string{"--overlap-credit", "3"}); err != nil {
		t.Fatal(err)
	}
	if err := applyRouterPreset(cmd, &rc, "dynamo"); err != nil {
		t.Fatal(err)
	}
	if rc.Selector.Cost != selector.CostBlocks || rc.Selector.PrefillLoadScale != 1 || rc.Predict.TTL != 0 || rc.Selector.OverlapCredit != 3 {
		t.Errorf("preset with flag override: %+v predict %v", rc.Selector, rc.Predict)
	}
	if err := applyRouterPreset(cmd, &rc, "nope"); err == nil {
		t.Error("unknown preset accepted")
	}
}
