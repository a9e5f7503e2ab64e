package replay

import (
	"math"
	"slices"
	"time"
)

// Dist summarizes a latency distribution in milliseconds.
type Dist struct {
	N    int     `json:"n"`
	Mean float64 `json:"mean_ms"`
	P50  float64 `json:"p50_ms"`
	P90  float64 `json:"p90_ms"`
	P99  float64 `json:"p99_ms"`
	Max  float64 `json:"max_ms"`
}

// Summarize sorts xs in place and returns its distribution.
func Summarize(xs []time.Duration) Dist {
	if len(xs) == 0 {
		return Dist{}
	}
	slices.Sort(xs)
	var sum float64
	for _, x := range xs {
		sum += ms(x)
	}
	return Dist{N: len(xs), Mean: sum / float64(len(xs)), P50: ms(quantile(xs, 0.5)), P90: ms(quantile(xs, 0.9)),
		P99: ms(quantile(xs, 0.99)), Max: ms(xs[len(xs)-1])}
}

// quantile is the nearest-rank quantile of sorted xs.
func quantile(xs []time.Duration, q float64) time.Duration {
	i := int(math.Ceil(q*float64(len(xs)))) - 1
	return xs[min(max(i, 0), len(xs)-1)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
