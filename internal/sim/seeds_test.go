package sim

import (
	"bytes"
	"strings"
	"testing"
)

func TestJudgeSeeds(t *testing.T) {
	pr := func(p Policy, p50, p99, vs float64) PolicyReport {
		return PolicyReport{Policy: p, TTFT: Quantiles{P50: p50, P99: p99}, VsPooled: vs}
	}
	rep := func(kv50, kv99, ap50, ap99, ld99 float64) Report {
		return Report{Policies: []PolicyReport{pr(PolicyKV, kv50, kv99, 0.95), pr(PolicyKVApprox, ap50, ap99, 0.95), pr(PolicyLoad, 200, ld99, 0.3)}}
	}
	seeds := []uint64{1, 2, 3}
	// p50: kv loses on the mean (101 > 100.33) but wins at seed 3: noise.
	// p99: kv beats approx; load is worse on the mean.
	reps := []Report{rep(101, 900, 100, 950, 1000), rep(102, 900, 100, 950, 1000), rep(100, 900, 101, 950, 1000)}
	sv, ok := JudgeSeeds(reps, seeds, PolicyKV, "t", 0.7)
	if !ok {
		t.Fatal("no verdict")
	}
	if sv.Result != SeedNoise || sv.StrictPass != 1 || len(sv.WorseP50) != 1 || sv.WorseP50[0].WorseSeeds != 2 || len(sv.WorseP99) != 0 {
		t.Errorf("noise verdict %+v", sv)
	}
	if s := sv.Stats[0].P50; s.Mean != 101 || s.Min != 100 || s.Max != 102 {
		t.Errorf("kv p50 spread %+v", s)
	}
	want := "t @70%: NOISE  strict 1/3 (s1 FAIL, s2 FAIL, s3 PASS)  p50 kv 101ms > approx 100ms (+0.67ms), worse at 2/3 seeds  p99 ok  hit/pooled 0.950 [ok]"
	if sv.String() != want {
		t.Errorf("line\n%s\nwant\n%s", sv, want)
	}
	// Worse than load's p99 at every seed: a real loss, whatever the size.
	for i := range reps {
		reps[i].Policies[2].TTFT.P99 = 899
	}
	if sv, _ := JudgeSeeds(reps, seeds, PolicyKV, "t", 0.7); sv.Result != SeedFail || len(sv.WorseP99) != 1 || sv.WorseP99[0].WorseSeeds != 3 {
		t.Errorf("fail verdict %+v", sv)
	}
	// Best means everywhere: pass, though one seed's strict verdict fails.
	reps = []Report{rep(99, 900, 100, 950, 1000), rep(101, 900, 100, 950, 1000), rep(99, 900, 100, 950, 1000)}
	sv, _ = JudgeSeeds(reps, seeds, PolicyKV, "t", 0.7)
	if sv.Result != SeedPass || sv.StrictPass != 2 || sv.Distinct != 2 || !strings.Contains(sv.String(), "(s1 PASS, s2 FAIL, s3 PASS) [2 distinct runs]") {
		t.Errorf("pass verdict %+v: %s", sv, sv)
	}
	// Three seeds with the same figures (no --load-jitter, no tie drawn
	// differently): worse at 3/3 seeds is one run's evidence, and says so.
	same := []Report{rep(101, 900, 100, 950, 1000), rep(101, 900, 100, 950, 1000), rep(101, 900, 100, 950, 1000)}
	if sv, _ := JudgeSeeds(same, seeds, PolicyKV, "t", 0.7); sv.Result != SeedFail || sv.Distinct != 1 ||
		!strings.Contains(sv.String(), "(s1 FAIL, s2 FAIL, s3 FAIL) [1 distinct run]  p50") {
		t.Errorf("one run thrice: %+v: %s", sv, sv)
	}
	// A mean hit rate below the bar fails.
	for i := range reps {
		reps[i].Policies[0].VsPooled = 0.85
	}
	if sv, _ := JudgeSeeds(reps, seeds, PolicyKV, "t", 0.7); sv.Result != SeedFail || sv.OKHit {
		t.Errorf("hit verdict %+v", sv)
	}
	if _, ok := JudgeSeeds(reps[:2], seeds, PolicyKV, "t", 0.7); ok {
		t.Error("reports and seeds of different lengths")
	}
	bad := append([]Report(nil), reps...)
	bad[1] = Report{Policies: []PolicyReport{pr(PolicyKV, 1, 1, 1), pr(PolicyLoad, 1, 1, 1), pr(PolicyKVApprox, 1, 1, 1)}}
	if _, ok := JudgeSeeds(bad, seeds, PolicyKV, "t", 0.7); ok {
		t.Error("policies in a different order")
	}
	var b bytes.Buffer
	if err := WriteSeedSummary(&b, "t", []SeedVerdict{sv}); err != nil {
		t.Fatal(err)
	}
	WriteSeedVerdicts(&b, []SeedVerdict{sv})
	for _, s := range []string{"trace t, seeds 1,2,3", "[99.0ms, 101ms]", "seed verdict t @70%: PASS",
		"1 pass, 0 within seed noise, 0 fail of 1", "seed 1: 1, seed 2: 0, seed 3: 1 of 1 pass"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("output lacks %q:\n%s", s, b.String())
		}
	}
}
