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
