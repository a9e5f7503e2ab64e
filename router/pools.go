package router

import (
	"fmt"
	"strconv"
	"strings"
)

// Pools are the sizes of a disaggregated fleet's prefill and decode pools:
// how many workers get RolePrefill and how many RoleDecode. The zero
// value is an aggregated fleet (every worker RoleBoth).
type Pools struct {
	Prefill, Decode int
}

// Enabled reports whether the fleet is disaggregated.
func (p Pools) Enabled() bool { return p.Prefill > 0 || p.Decode > 0 }

// String is "P:D" ("" when aggregated), the form ParsePools reads.
func (p Pools) String() string {
	if !p.Enabled() {
		return ""
	}
	return fmt.Sprintf("%d:%d", p.Prefill, p.Decode)
}

// ParsePools parses "P:D", two positive pool sizes ("" = aggregated).
func ParsePools(s string) (Pools, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Pools{}, nil
	}
	ps, ds, ok := strings.Cut(s, ":")
	p, err1 := strconv.Atoi(ps)
	d, err2 := strconv.Atoi(ds)
	if !ok || err1 != nil || err2 != nil || p < 1 || d < 1 {
		return Pools{}, fmt.Errorf("router: disagg pools %q: want P:D, two positive pool sizes", s)
	}
	return Pools{Prefill: p, Decode: d}, nil
}

// ParseDisaggPolicies parses a comma-separated list of disaggregation
// policies (ParseDisaggPolicy names); empty fields are skipped.
func ParseDisaggPolicies(s string) ([]DisaggPolicy, error) {
	var out []DisaggPolicy
	for _, f := range strings.Split(s, ",") {
		if strings.TrimSpace(f) == "" {
			continue
		}
		p, err := ParseDisaggPolicy(f)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}
