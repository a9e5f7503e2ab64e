package discovery

import (
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// entry is a registry entry as a Get returns it.
type entry struct {
	jetstream.KeyValueEntry // nil: only the methods below are called
	created                 time.Time
	op                      jetstream.KeyValueOp
	value                   string
}

func (e entry) Value() []byte { return []byte(e.value) }

func (e entry) Created() time.Time              { return e.created }
func (e entry) Operation() jetstream.KeyValueOp { return e.op }

// A silent worker is dropped only when the bucket confirms it: a fresh
// entry means the watch stalled (a NATS node died under it), an unreadable
// bucket means nobody can tell yet.
func TestExpiry(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ttl := 15 * time.Second
	for _, tc := range []struct {
		name  string
		e     jetstream.KeyValueEntry
		err   error
		epoch string
		want  expiryVerdict
	}{
		{"key gone", nil, jetstream.ErrKeyNotFound, "", expiryGone},
		{"key deleted", nil, jetstream.ErrKeyDeleted, "", expiryGone},
		{"stale entry", entry{created: now.Add(-ttl - time.Second), op: jetstream.KeyValuePut}, nil, "", expiryGone},
		{"delete marker", entry{created: now, op: jetstream.KeyValueDelete}, nil, "", expiryGone},
		{"fresh entry", entry{created: now.Add(-time.Second), op: jetstream.KeyValuePut}, nil, "", expiryWatchStalled},
		{"fresh entry, same instance", entry{created: now, op: jetstream.KeyValuePut, value: `{"epoch":"a"}`}, nil, "a", expiryWatchStalled},
		{"fresh entry, no epoch", entry{created: now, op: jetstream.KeyValuePut, value: `{"id":1}`}, nil, "a", expiryWatchStalled},
		{"fresh entry of another instance", entry{created: now, op: jetstream.KeyValuePut, value: `{"epoch":"b"}`}, nil, "a", expiryGone},
		{"no leader", nil, errors.New("nats: no responders available for request"), "", expiryUnknown},
		{"timeout", nil, jetstream.ErrJetStreamNotEnabled, "", expiryUnknown},
	} {
		if got := expiry(tc.e, tc.err, now, ttl, tc.epoch); got != tc.want {
			t.Errorf("%s: expiry = %d, want %d", tc.name, got, tc.want)
		}
	}
}
