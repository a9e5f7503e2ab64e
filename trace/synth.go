package trace

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// Tokens appends the synthesized prompt of rec to dst and returns the
// extended slice: hash id h becomes tokensPerID copies of uint32(h), in
// order, cut at rec.InputLength tokens (the prompt is shorter when the ids
// run out first). Use TraceBlockTokens as tokensPerID to keep the recorded
// prompt length (see the package doc). tokensPerID must be positive.
func Tokens(dst []uint32, rec *Record, tokensPerID int) []uint32 {
	if tokensPerID <= 0 {
		panic("trace: tokensPerID must be positive")
	}
	n := min(rec.InputLength, len(rec.HashIDs)*tokensPerID)
	dst = slices.Grow(dst, n)
	for _, h := range rec.HashIDs {
		if n <= 0 {
			break
		}
		k := min(n, tokensPerID)
		t := uint32(h)
		for range k {
			dst = append(dst, t)
		}
		n -= k
	}
	return dst
}

// ScaleLength stretches every request by an integer factor k >= 1, as
// Dynamo's trace_length_factor does: trace block h becomes the k blocks
// h*k, h*k+1, ..., h*k+k-1 and input_length is multiplied by k. Prefix
// sharing is preserved block for block; output lengths are unchanged.
func ScaleLength(recs []Record, k int) ([]Record, error) {
	if k < 1 {
		return nil, fmt.Errorf("trace: length factor %d must be >= 1", k)
	}
	out := make([]Record, len(recs))
	for i, r := range recs {
		ids := make([]uint64, 0, len(r.HashIDs)*k)
		for _, h := range r.HashIDs {
			for j := range k {
				ids = append(ids, h*uint64(k)+uint64(j))
			}
		}
		r.HashIDs = ids
		r.InputLength *= k
		out[i] = r
	}
	return out, nil
}

// Duplicate returns k copies of the trace whose hash ids live in disjoint
// spaces (copy c adds c*(max id+1)), as Dynamo's trace_duplication_factor
// does: k structurally identical prefix trees, k times the requests. The
// copies of one request are adjacent and share its timestamp, so the result
// stays in timestamp order when recs is.
func Duplicate(recs []Record, k int) ([]Record, error) {
	if k < 1 {
		return nil, fmt.Errorf("trace: duplication factor %d must be >= 1", k)
	}
	var span uint64
	for _, r := range recs {
		for _, h := range r.HashIDs {
			span = max(span, h+1)
		}
	}
	out := make([]Record, 0, len(recs)*k)
	for _, r := range recs {
		for c := range k {
			d := r
			d.HashIDs = make([]uint64, len(r.HashIDs))
			for j, h := range r.HashIDs {
				d.HashIDs[j] = h + uint64(c)*span
			}
			out = append(out, d)
		}
	}
	return out, nil
}

// ScaleTime multiplies every timestamp by f > 0 (f < 1 replays faster).
// Hash-id slices are shared with recs.
func ScaleTime(recs []Record, f float64) ([]Record, error) {
	if !(f > 0) || math.IsInf(f, 0) {
		return nil, fmt.Errorf("trace: time factor %v must be finite and > 0", f)
	}
	out := make([]Record, len(recs))
	for i, r := range recs {
		r.Timestamp = time.Duration(math.Round(float64(r.Timestamp) * f))
		out[i] = r
	}
	return out, nil
}

// RescaleSpan shifts and scales timestamps linearly so the first record
// arrives at 0 and the last at span (Dynamo's trace_simulation_duration).
// A trace whose timestamps are all equal is only shifted to 0. Hash-id slices
// are shared with recs.
func RescaleSpan(recs []Record, span time.Duration) ([]Record, error) {
	if span < 0 {
		return nil, fmt.Errorf("trace: span %v must be >= 0", span)
	}
	out := slices.Clone(recs)
	if len(out) == 0 {
		return out, nil
	}
	lo, hi := out[0].Timestamp, out[0].Timestamp
	for _, r := range out {
		lo, hi = min(lo, r.Timestamp), max(hi, r.Timestamp)
	}
	f := 0.0
	if hi > lo {
		f = float64(span) / float64(hi-lo)
	}
	for i := range out {
		out[i].Timestamp = time.Duration(math.Round(float64(out[i].Timestamp-lo) * f))
	}
	return out, nil
}

// Assign draws a worker in [0, workers) for each of n requests, uniformly and
// independently, from rng (seed a rand.NewPCG for reproducible splits).
func Assign(n, workers int, rng *rand.Rand) ([]int, error) {
	if workers < 1 {
		return nil, fmt.Errorf("trace: workers %d must be >= 1", workers)
	}
	w := make([]int, n)
	for i := range w {
		w[i] = rng.IntN(workers)
	}
	return w, nil
}

// Partition splits recs across workers with Assign; each part keeps the
// trace order. Records are copied; hash-id slices are shared with recs.
func Partition(recs []Record, workers int, rng *rand.Rand) ([][]Record, error) {
	a, err := Assign(len(recs), workers, rng)
	if err != nil {
		return nil, err
	}
	parts := make([][]Record, workers)
	for i, w := range a {
		parts[w] = append(parts[w], recs[i])
	}
	return parts, nil
}
