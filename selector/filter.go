package selector

import "slices"

func allowFilter(req *Request, cands []Candidate, out []Reason) {
	if len(req.Constraints.Allow) == 0 {
		return
	}
	for i := range cands {
		if out[i] == ReasonNone && !slices.Contains(req.Constraints.Allow, cands[i].Worker.ID) {
			out[i] = ReasonNotAllow
		}
	}
}

func pinFilter(req *Request, cands []Candidate, out []Reason) {
	p := req.Constraints.Pin
	if p == nil {
		return
	}
	for i := range cands {
		if out[i] == ReasonNone && cands[i].Worker != *p {
			out[i] = ReasonNotPinned
		}
	}
}

func rankFilter(req *Request, cands []Candidate, out []Reason) {
	r := req.Constraints.Ranks
	if r == nil {
		return
	}
	for i := range cands {
		if rk := cands[i].Worker.Rank; out[i] == ReasonNone && (rk < r.Min || rk > r.Max) {
			out[i] = ReasonRank
		}
	}
}

func labelFilter(req *Request, cands []Candidate, out []Reason) {
	if len(req.Constraints.Labels) == 0 {
		return
	}
	for i := range cands {
		if out[i] != ReasonNone {
			continue
		}
		for k, v := range req.Constraints.Labels {
			if got, ok := cands[i].Labels[k]; !ok || got != v {
				out[i] = ReasonLabel
				break
			}
		}
	}
}

// Over reports whether one rank is over any enabled busy threshold of cfg.
func (cfg Config) Over(c *Candidate) bool {
	if cfg.BusyKVUsage > 0 && c.KVUsage >= 0 && c.KVUsage > cfg.BusyKVUsage {
		return true
	}
	if cfg.BusyPrefillTokens > 0 && c.ActivePrefillTokens > cfg.BusyPrefillTokens {
		return true
	}
	if cfg.BusyPrefillFraction > 0 && c.MaxNumBatchedTokens > 0 &&
		float64(c.ActivePrefillTokens) > cfg.BusyPrefillFraction*float64(c.MaxNumBatchedTokens) {
		return true
	}
	return false
}

// busyFilter drops every rank of a worker all of whose ranks (among the
// candidates, eligible or not) are over a busy threshold.
func busyFilter(cfg Config) Filter {
	if cfg.BusyKVUsage <= 0 && cfg.BusyPrefillTokens <= 0 && cfg.BusyPrefillFraction <= 0 {
		return func(*Request, []Candidate, []Reason) {}
	}
	return func(_ *Request, cands []Candidate, out []Reason) {
		// Only over ranks pay for the scan of their siblings, so the common
		// case (nobody busy) is linear.
		for i := range cands {
			if out[i] != ReasonNone {
				continue
			}
			if !cfg.Over(&cands[i]) {
				continue
			}
			id := cands[i].Worker.ID
			busy := true
			for j := range cands {
				if cands[j].Worker.ID == id && !cfg.Over(&cands[j]) {
					busy = false
					break
				}
			}
			if busy {
				out[i] = ReasonBusy
			}
		}
	}
}
