package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// --dump-requests writes one JSON line per completed request, policy, load
// and trace, each labelled with its run; the second trace appends.
func TestSimDumpRequests(t *testing.T) {
	tr := writeSimTestTrace(t)
	dump := filepath.Join(t.TempDir(), "requests.jsonl")
	runSimCmd(t, "--traces", tr+","+tr, "--workers", "2", "--num-blocks", "512", "--quiet",
		"--policies", "kv,round-robin", "--loads", "0.5,0.9", "--dump-requests", dump)
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
