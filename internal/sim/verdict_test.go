package sim

import (
	"bytes"
	"strings"
	"testing"
)

func TestJudge(t *testing.T) {
	pr := func(p Policy, p50, p99, vs float64) PolicyReport {
		return PolicyReport{Policy: p, TTFT: Quantiles{P50: p50, P99: p99}, VsPooled: vs}
	}
	rep := Report{Policies: []PolicyReport{
		pr(PolicyKV, 100, 900, 0.95), pr(PolicyCacheAware, 120, 800, 0.97), pr(PolicyRoundRobin, 100, 2000, 0.3),
	}}
	v, ok := Judge(&rep, PolicyKV, "t", 0.7)
	if !ok {
		t.Fatal("no verdict")
	}
	// p50 ties round-robin (ok), p99 loses to cache-aware, hit passes.
	if !v.OKP50 || v.OKP99 || !v.OKHit || v.Pass || v.BestP99By != PolicyCacheAware || v.BestP50 != 100 {
		t.Errorf("verdict %+v", v)
	}
	want := "t @70%: FAIL  kv p50 100ms vs round-robin 100ms [ok]  p99 900ms vs cache-aware 800ms [NO]  hit/pooled 0.950 [ok]"
	if v.String() != want {
		t.Errorf("line\n%s\nwant\n%s", v, want)
	}
	rep.Policies[0].TTFT.P99 = 700
	if v, _ := Judge(&rep, PolicyKV, "t", 0.7); !v.Pass {
		t.Errorf("should pass: %v", v)
	}
	rep.Policies[0].VsPooled = 0.89
	if v, _ := Judge(&rep, PolicyKV, "t", 0.7); v.Pass || v.OKHit {
		t.Errorf("hit 0.89 < 0.9 should fail: %v", v)
	}
	if _, ok := Judge(&Report{Policies: rep.Policies[:1]}, PolicyKV, "t", 0); ok {
		t.Error("a verdict needs another policy")
	}
	var b bytes.Buffer
	if err := WriteSummary(&b, "t", []float64{0.7}, []Report{rep}, PolicyKV); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "verdict t @70%: FAIL") || !strings.Contains(b.String(), "cache-aware") {
		t.Errorf("summary:\n%s", b.String())
	}
}

// One run's TTFT loss within NoiseTolerance is NOISE, not FAIL: the first
// `kvrouter sim` printed "azure-conv @trace rate: FAIL  kv p50 30.6ms vs
// load 30.5ms [NO]" for a loss well inside the seed-to-seed spread.
func TestJudgeNoise(t *testing.T) {
	pr := func(p Policy, p50, p99, vs float64) PolicyReport {
		return PolicyReport{Policy: p, TTFT: Quantiles{P50: p50, P99: p99}, VsPooled: vs}
	}
	for _, tc := range []struct {
		name                   string
		kvP50, kvP99, kvVsPool float64
		want                   string
	}{
		{"p50 +0.3%", 30.6, 93.1, 0.993,
			"azure-conv @trace rate: NOISE  kv p50 30.6ms vs load 30.5ms [+0.3%, noise]  p99 93.1ms vs approx 93.2ms [ok]  hit/pooled 0.993 [ok]"},
		{"p99 +1.8%", 30.4, 94.9, 0.993,
			"azure-conv @trace rate: NOISE  kv p50 30.4ms vs load 30.5ms [ok]  p99 94.9ms vs approx 93.2ms [+1.8%, noise]  hit/pooled 0.993 [ok]"},
		{"p50 +3%", 31.5, 93.1, 0.993,
			"azure-conv @trace rate: FAIL  kv p50 31.5ms vs load 30.5ms [NO]  p99 93.1ms vs approx 93.2ms [ok]  hit/pooled 0.993 [ok]"},
		{"noise but hit low", 30.6, 93.1, 0.8,
			"azure-conv @trace rate: FAIL  kv p50 30.6ms vs load 30.5ms [+0.3%, noise]  p99 93.1ms vs approx 93.2ms [ok]  hit/pooled 0.800 [NO]"},
		{"pass", 30.4, 93.1, 0.993,
			"azure-conv @trace rate: PASS  kv p50 30.4ms vs load 30.5ms [ok]  p99 93.1ms vs approx 93.2ms [ok]  hit/pooled 0.993 [ok]"},
	} {
		rep := Report{Policies: []PolicyReport{pr(PolicyKV, tc.kvP50, tc.kvP99, tc.kvVsPool),
			pr(PolicyKVApprox, 30.7, 93.2, 0.99), pr(PolicyLoad, 30.5, 93.7, 0.44)}}
		v, ok := Judge(&rep, PolicyKV, "azure-conv", 0)
		if !ok || v.String() != tc.want {
			t.Errorf("%s: line\n%s\nwant\n%s", tc.name, v, tc.want)
		}
		if v.Pass != strings.HasPrefix(tc.want[len("azure-conv @trace rate: "):], "PASS") {
			t.Errorf("%s: strict pass %v", tc.name, v.Pass)
		}
	}
	var b bytes.Buffer
	rep := Report{Policies: []PolicyReport{pr(PolicyKV, 30.6, 93.1, 0.993), pr(PolicyLoad, 30.5, 93.7, 0.44)}}
	v, _ := Judge(&rep, PolicyKV, "azure-conv", 0)
	WriteVerdicts(&b, []Verdict{v, v})
	if !strings.HasPrefix(b.String(), "verdicts: 0 of 2 pass, 2 within noise") {
		t.Errorf("verdicts:\n%s", b.String())
	}
}
