package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
)

// With KeepRequests every completed request gets a row, in the order of
// the report's TTFT samples and with the same TTFT; the router's policies
// fill its prediction (a kv hit on a later turn is predicted and found),
// and WriteRequests emits one JSON object per row with the run's labels.
func TestRequestRows(t *testing.T) {
	recs := conversations(2, 6, 2*time.Second, 5)
	cfg := smallConfig(recs, 2)
	cfg.Policies = []Policy{PolicyKV, PolicyLoad, PolicyCacheAware}
	cfg.KeepSamples = true
	cfg.KeepRequests = true
	rep, err := Run(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, pr := range rep.Policies {
		rows := pr.RequestRows
		if len(rows) != pr.Completed || len(rows) != len(pr.TTFTSamples) {
			t.Fatalf("%s: %d rows, %d completed, %d samples", pr.Policy, len(rows), pr.Completed, len(pr.TTFTSamples))
		}
		seen := map[int]bool{}
		hits := 0
		for k, r := range rows {
			if r.TTFTMS != pr.TTFTSamples[k] {
				t.Errorf("%s row %d: ttft %v, sample %v", pr.Policy, k, r.TTFTMS, pr.TTFTSamples[k])
			}
			if seen[r.ID] || r.ID < 0 || r.ID >= len(recs) {
				t.Errorf("%s row %d: id %d repeated or out of range", pr.Policy, k, r.ID)
			}
			seen[r.ID] = true
			if r.Policy != string(pr.Policy) || r.ISLBlocks != recs[r.ID].InputLength/cfg.BlockSize {
				t.Errorf("%s row %d: policy %q, isl blocks %d of %d tokens", pr.Policy, k, r.Policy, r.ISLBlocks, recs[r.ID].InputLength)
			}
			// The first token comes at the end of its pass.
			if d := r.FirstPassWaitMS + r.FirstPassMS - r.TTFTMS; math.Abs(d) > 1e-6 {
				t.Errorf("%s row %d: first pass wait %v + %v != ttft %v", pr.Policy, k, r.FirstPassWaitMS, r.FirstPassMS, r.TTFTMS)
			}
			scored := pr.Policy != PolicyCacheAware
			if scored != (len(r.Candidates) == 2) || scored != (r.PredTTFTMS > 0) {
				t.Errorf("%s row %d: %d candidates, predicted ttft %v", pr.Policy, k, len(r.Candidates), r.PredTTFTMS)
			}
			if pr.Policy == PolicyKV && r.PredCachedBlocks > 0 && r.CachedBlocks > 0 {
				hits++
			}
			if pr.Policy == PolicyLoad && r.PredCachedBlocks != 0 {
				t.Errorf("load row %d credited %d blocks", k, r.PredCachedBlocks)
			}
		}
		if pr.Policy == PolicyKV && hits == 0 {
			t.Errorf("kv: no predicted hit was found")
		}
	}
	var buf bytes.Buffer
	run := map[string]any{"trace": "conv", "load": 0.5}
	if err := WriteRequests(&buf, run, rep.Policies[0].RequestRows); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != len(rep.Policies[0].RequestRows) {
		t.Fatalf("%d lines for %d rows", len(lines), len(rep.Policies[0].RequestRows))
	}
	var got struct {
		Run    map[string]any `json:"run"`
		Policy string         `json:"policy"`
		TTFT   float64        `json:"ttft_ms"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &got); err != nil {
		t.Fatal(err)
	}
	if got.Run["trace"] != "conv" || got.Policy != "kv" || got.TTFT != rep.Policies[0].TTFTSamples[0] {
		t.Errorf("first line %s", lines[0])
	}
	// Off by default: no rows.
	cfg.KeepRequests = false
	rep, err = Run(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, pr := range rep.Policies {
		if pr.RequestRows != nil {
			t.Errorf("%s: rows without KeepRequests", pr.Policy)
		}
	}
}
