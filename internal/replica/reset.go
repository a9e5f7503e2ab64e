package replica

import (
	"context"
	"errors"
	"fmt"

	"github.com/kvrouter/kvrouter/internal/eventplane"
)

// ErrLeaseHeld: a start from clean state was refused because another
// replica holds this model's snapshot lease (it is serving from the state
// the reset would delete).
var ErrLeaseHeld = errors.New("replica: another replica holds the snapshot lease")

// ResetStats is what Reset deleted.
type ResetStats struct {
	// Events are the model's KV events purged from the stream, Snapshots
	// the snapshots deleted. Holder is who held the snapshot lease ("" no
	// one, or this replica).
	Events    uint64
	Snapshots int
	Holder    string
}

// Reset starts this replica's model from clean state, as Dynamo's
// --router-reset-states: it purges the model's KV events from the stream
// and deletes the snapshots (worker registrations are discovery's). Call
// it before Run. Unless force, it refuses with ErrLeaseHeld while another
// replica holds the model's snapshot lease; a lease left by this replica's
// own id passes.
func (r *Replica) Reset(ctx context.Context, force bool) (ResetStats, error) {
	var st ResetStats
	l := r.lease
	if l == nil {
		var err error
		if l, err = NewLease(r.conn, r.leaseConfig()); err != nil {
			return st, err
		}
	}
	holder, err := l.Holder(ctx)
	if err != nil {
		return st, fmt.Errorf("replica: reset: %w", err)
	}
	if holder != "" && holder != r.cfg.ID {
		st.Holder = holder
		if !force {
			return st, fmt.Errorf("%w: %q holds it (wait for its lease TTL %v after it stops, or force)", ErrLeaseHeld, holder, r.cfg.LeaseTTL)
		}
	}
	if st.Events, err = r.conn.PurgeModel(ctx, r.cfg.Model); err != nil {
		return st, fmt.Errorf("replica: reset: %w", err)
	}
	if st.Snapshots, err = r.snaps.Purge(ctx); err != nil {
		return st, fmt.Errorf("replica: reset: %w", err)
	}
	return st, nil
}

// leaseConfig is the snapshot writer's lease of this replica's model.
func (r *Replica) leaseConfig() LeaseConfig {
	return LeaseConfig{Bucket: r.cfg.LeaseBucket, Key: "snapshot-writer." + eventplane.SubjectToken(r.cfg.Model),
		Holder: r.cfg.ID, TTL: r.cfg.LeaseTTL, Renew: r.cfg.LeaseRenew, Logger: r.cfg.Logger}
}
