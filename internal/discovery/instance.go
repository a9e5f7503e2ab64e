package discovery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// ErrDuplicate is wrapped by the error of a registration whose id another
// live instance (another Epoch) holds.
var ErrDuplicate = errors.New("discovery: worker id held by another live instance")

// ReasonDuplicate is the refusal reason of ErrDuplicate.
const ReasonDuplicate = "duplicate"

// DuplicateError is a registration refused because another live instance
// holds its id.
type DuplicateError struct {
	ID uint64
	// Epoch is the refused instance's, Holder the live holder's.
	Epoch, Holder string
}

func (e *DuplicateError) Error() string {
	return fmt.Sprintf("%v: worker %d: instance %q refused, instance %q holds it", ErrDuplicate, e.ID, e.Epoch, e.Holder)
}

// Unwrap makes errors.Is(err, ErrDuplicate) hold.
func (e *DuplicateError) Unwrap() error { return ErrDuplicate }

// epochOf is a registration's instance identity ("" when it does not
// decode or announces none: an older writer, identity unknown).
func epochOf(value []byte) string {
	var w struct {
		Epoch string `json:"epoch"`
	}
	if len(value) > maxRegistrationSize || json.Unmarshal(value, &w) != nil {
		return ""
	}
	return w.Epoch
}

// sameInstance reports whether two epochs may be one instance: equal, or
// either unknown (a registration without one still works, as before).
func sameInstance(a, b string) bool { return a == "" || b == "" || a == b }

// claim writes w's registration and returns its revision: it creates the
// key, or takes it over when the entry there is this instance's own (a
// retry) or of unknown identity. An entry of another epoch is a live
// instance (the bucket's TTL removes a dead one's): *DuplicateError,
// nothing written, unless held: this instance held the id when the other
// wrote over it (a writer without this check), and writes it back.
func (r *Registry) claim(ctx context.Context, kv jetstream.KeyValue, w Worker, b []byte, held bool) (uint64, error) {
	rev, err := kv.Create(ctx, key(w.ID), b)
	if err == nil || !errors.Is(err, jetstream.ErrKeyExists) {
		return rev, err
	}
	e, err := kv.Get(ctx, key(w.ID))
	if err != nil {
		return 0, err // gone meanwhile (ErrKeyNotFound): the next try creates it
	}
	if other := epochOf(e.Value()); !sameInstance(other, w.Epoch) {
		if !held {
			return 0, &DuplicateError{ID: w.ID, Epoch: w.Epoch, Holder: other}
		}
		r.duplicates.Add(1)
		r.cfg.Logger.Warn("worker registration overwritten by another instance; writing it back", "worker", w.ID,
			"epoch", w.Epoch, "other_epoch", other)
	}
	return kv.Update(ctx, key(w.ID), b, e.Revision())
}

// lostRevision: the entry moved under a holder (someone else wrote it, or
// the bucket was recreated empty).
func lostRevision(err error) bool {
	return errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) ||
		errors.Is(err, jetstream.ErrKeyNotFound)
}
