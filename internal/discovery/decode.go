package discovery

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Reasons a registration is refused (the reason label of
// kvrouter_workers_refused_total).
const (
	ReasonDecode     = "decode"      // not a JSON Worker, or oversized
	ReasonKey        = "key"         // key not "w.<id>" with id > 0
	ReasonIDMismatch = "id_mismatch" // the entry's id is not its key's
	ReasonInvalid    = "invalid"     // Worker.Validate failed
	ReasonBlockSize  = "block_size"  // block size differs from the router's
	ReasonRouter     = "router"      // the Membership refused it
	ReasonPanic      = "panic"       // joining it panicked (recovered)
)

// Sentinels of DecodeRegistration's errors.
var (
	ErrDecode     = errors.New("discovery: undecodable registration")
	ErrKey        = errors.New("discovery: bad registry key")
	ErrIDMismatch = errors.New("discovery: registration id differs from its key")
)

// Refuser is told about registrations refused before they reach Join
// (undecodable entries, bad keys). Fleet implements it; Registry.Watch
// calls it when its Membership does.
type Refuser interface {
	Refuse(id uint64, reason string, err error)
}

// KeyID parses a registry key "w.<id>" (id > 0).
func KeyID(key string) (uint64, error) {
	s, ok := strings.CutPrefix(key, "w.")
	id, err := strconv.ParseUint(s, 10, 64)
	if !ok || err != nil || id == 0 || s != strconv.FormatUint(id, 10) {
		return 0, fmt.Errorf("%w: %.80q", ErrKey, key)
	}
	return id, nil
}

// DecodeRegistration decodes and validates one registry entry: key
// "w.<id>", value a JSON Worker of that id within Validate's bounds. It
// never panics, whatever the bytes.
func DecodeRegistration(key string, value []byte) (Worker, error) {
	id, err := KeyID(key)
	if err != nil {
		return Worker{}, err
	}
	if len(value) > maxRegistrationSize {
		return Worker{}, fmt.Errorf("%w: worker %d: %d bytes, at most %d", ErrDecode, id, len(value), maxRegistrationSize)
	}
	var w Worker
	if err := json.Unmarshal(value, &w); err != nil {
		return Worker{}, fmt.Errorf("%w: worker %d: %w", ErrDecode, id, err)
	}
	if w.ID != id {
		return Worker{}, fmt.Errorf("%w: key %q holds worker %d", ErrIDMismatch, key, w.ID)
	}
	if err := w.Validate(); err != nil {
		return Worker{}, err
	}
	return w, nil
}

// Reason is the refusal reason of an error from this package's checks
// (ReasonRouter for anything else).
func Reason(err error) string {
	switch {
	case errors.Is(err, ErrDecode):
		return ReasonDecode
	case errors.Is(err, ErrKey):
		return ReasonKey
	case errors.Is(err, ErrIDMismatch):
		return ReasonIDMismatch
	case errors.Is(err, ErrInvalid):
		return ReasonInvalid
	case errors.Is(err, ErrBlockSize):
		return ReasonBlockSize
	case errors.Is(err, errPanic):
		return ReasonPanic
	case errors.Is(err, ErrDuplicate):
		return ReasonDuplicate
	}
	return ReasonRouter
}

var errPanic = errors.New("discovery: panic while joining")
