package sim

import "testing"

// TestPolicyNames: the simulator takes the router's policy names (one
// vocabulary with serve and replay) plus its own cache-aware baseline;
// the former spelling "kv-approx" is refused.
func TestPolicyNames(t *testing.T) {
	got, err := ParsePolicies("kv, approx,load,round-robin,random,cache-aware")
	if err != nil {
		t.Fatal(err)
	}
	want := []Policy{PolicyKV, PolicyKVApprox, PolicyLoad, PolicyRoundRobin, PolicyRandom, PolicyCacheAware}
	if len(got) != len(want) {
		t.Fatalf("parsed %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("parsed %v, want %v", got, want)
		}
	}
	if PolicyKVApprox != "approx" {
		t.Errorf("approx prints as %q", PolicyKVApprox)
	}
	for _, bad := range []string{"rr", "kv-approx"} {
		if _, err := ParsePolicy(bad); err == nil {
			t.Errorf("%s parsed", bad)
		}
	}
}
