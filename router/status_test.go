package router

import (
	"errors"

	"github.com/kvrouter/kvrouter/selector"
)

// errStatus is the number the transcripts print for a routing error:
// the status the HTTP frontend answers it with (internal/frontend), so
// transcripts read like the API (400 bad request, 503 none eligible, 529
// overloaded, 500 other).
func errStatus(err error) int {
	switch {
	case err == nil:
		return 200
	case errors.Is(err, ErrBadRequest):
		return 400
	case errors.Is(err, selector.ErrAllOverloaded):
		return 529
	case errors.Is(err, selector.ErrNoneEligible):
		return 503
	}
	return 500
}
