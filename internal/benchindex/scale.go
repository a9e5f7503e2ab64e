package benchindex

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/kvrouter/kvrouter/trace"
)

// Scale enlarges a trace the way the reference benchmark does, so that one
// measured replay lasts long enough (seconds, not milliseconds) for a
// sustained figure to mean something:
//
//   - lengthFactor F: every prompt's blocks are extended F times: hash id h
//     becomes the F ids h*F .. h*F+F-1 and input_length grows F times, so
//     prompts are F times longer and keep their prefix sharing exactly (two
//     prompts share k blocks before scaling iff they share k*F after).
//   - duplicate N: N copies of the (extended) trace with disjoint hash ids
//     (copy c maps id h to h*N+c), interleaved in time: copies keep their
//     timestamps, so records are ordered by timestamp, then copy, then
//     original order.
//
// Values <= 1 leave that dimension unchanged. The input is not modified.
func Scale(recs []trace.Record, duplicate, lengthFactor int) ([]trace.Record, error) {
	n, f := uint64(max(duplicate, 1)), uint64(max(lengthFactor, 1))
	if n == 1 && f == 1 {
		return recs, nil
	}
	var maxID uint64
	for i := range recs {
		for _, h := range recs[i].HashIDs {
			maxID = max(maxID, h)
		}
	}
	if maxID > ^uint64(0)/(n*f) {
		return nil, fmt.Errorf("benchindex: hash id %d overflows when scaled by %d x %d", maxID, n, f)
	}
	out := make([]trace.Record, 0, len(recs)*int(n))
	for i := range recs {
		r := recs[i]
		for c := range n {
			ids := make([]uint64, 0, len(r.HashIDs)*int(f))
			for _, h := range r.HashIDs {
				for k := range f {
					ids = append(ids, (h*f+k)*n+c)
				}
			}
			out = append(out, trace.Record{Timestamp: r.Timestamp, InputLength: r.InputLength * int(f),
				OutputLength: r.OutputLength, HashIDs: ids})
		}
	}
	// Records of the input are usually sorted already; copies of one record
	// are adjacent, so a stable sort by timestamp interleaves the copies.
	slices.SortStableFunc(out, func(a, b trace.Record) int { return cmp.Compare(a.Timestamp, b.Timestamp) })
	return out, nil
}
