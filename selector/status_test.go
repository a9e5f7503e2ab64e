package selector

import "errors"

// errStatus is the number the transcripts print for a Select error: the
// status the HTTP frontend answers it with (503 none eligible, 529
// overloaded, 500 other).
func errStatus(err error) int {
	switch {
	case err == nil:
		return 200
	case errors.Is(err, ErrAllOverloaded):
		return 529
	case errors.Is(err, ErrNoneEligible):
		return 503
	}
	return 500
}
