package frontend

import (
	"errors"
	"net/http"

	"github.com/kvrouter/kvrouter/router"
	"github.com/kvrouter/kvrouter/selector"
)

// StatusOverloaded answers selector.ErrAllOverloaded: every eligible
// worker is over a busy threshold, or the queue is full (non-standard,
// used by several LLM APIs for "overloaded").
const StatusOverloaded = 529

// httpStatus maps a routing error to the HTTP status the frontend
// answers: 400 router.ErrBadRequest, 529 selector.ErrAllOverloaded, 503
// selector.ErrNoneEligible, 500 anything else. The core packages return
// sentinel errors only; statuses are the shell's.
func httpStatus(err error) int {
	switch {
	case errors.Is(err, router.ErrBadRequest):
		return http.StatusBadRequest
	case errors.Is(err, selector.ErrAllOverloaded):
		return StatusOverloaded
	case errors.Is(err, selector.ErrNoneEligible):
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}
