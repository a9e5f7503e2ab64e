package fleet

import (
	"errors"
	"fmt"
	"math"
)

// checkSpeedupRatios validates Config.SpeedupRatios for n workers: one
// finite, positive ratio per worker (zero would stall a mocker that every
// request may be routed to).
func checkSpeedupRatios(rs []float64, n int) error {
	if len(rs) == 0 {
		return nil
	}
	var errs []error
	if len(rs) != n {
		errs = append(errs, fmt.Errorf("fleet: %d speedup ratios for %d workers", len(rs), n))
	}
	for i, r := range rs {
		if !(r > 0) || math.IsInf(r, 0) {
			errs = append(errs, fmt.Errorf("fleet: worker %d speedup ratio %v must be finite and > 0", i+1, r))
		}
	}
	return errors.Join(errs...)
}
