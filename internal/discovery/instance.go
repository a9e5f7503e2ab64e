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

// instance is what identifies a registration's process: its Epoch
// ("" when it does not decode or announces none: an older writer,
// identity unknown) and its URL.
type instance struct {
	Epoch string `json:"epoch"`
	URL   string `json:"url"`
}

func instanceOf(value []byte) instance {
	var in instance
	if len(value) > maxRegistrationSize || json.Unmarshal(value, &in) != nil {
		return instance{}
	}
	return in
}

// supersedes reports whether registration b may replace a live a: the
// same instance (equal epochs, or either unknown, as before epochs), or a
// new process at the same URL: two live processes cannot listen on one
// address, so a is dead (a restart, whose empty cache the router must
// learn at once). A new epoch at another URL is a second live instance.
func supersedes(a, b instance) bool {
	return a.Epoch == "" || b.Epoch == "" || a.Epoch == b.Epoch || a.URL == b.URL
}

// claim writes w's registration and returns its revision: it creates the
// key, or takes it over when w supersedes the entry there (its own, a
// retry; of unknown identity; or of a dead process at w's URL). An entry of another epoch is a live
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
	if other := instanceOf(e.Value()); !supersedes(other, instance{Epoch: w.Epoch, URL: w.URL}) {
		if !held {
			return 0, &DuplicateError{ID: w.ID, Epoch: w.Epoch, Holder: other.Epoch}
		}
		r.duplicates.Add(1)
		r.cfg.Logger.Warn("worker registration overwritten by another instance; writing it back", "worker", w.ID,
			"epoch", w.Epoch, "other_epoch", other.Epoch, "other_url", other.URL)
	}
	return kv.Update(ctx, key(w.ID), b, e.Revision())
}

// lostRevision: the entry moved under a holder (someone else wrote it, or
// the bucket was recreated empty).
func lostRevision(err error) bool {
	return errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) ||
		errors.Is(err, jetstream.ErrKeyNotFound)
}
