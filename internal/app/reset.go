package app

import (
	"context"
	"fmt"

	"github.com/kvrouter/kvrouter/internal/discovery"
	"github.com/kvrouter/kvrouter/internal/eventplane"
	"github.com/kvrouter/kvrouter/internal/replica"
)

// resetStates starts model from clean state (ServeConfig.ResetStates):
// its stream events and snapshots (the replica's), then its worker
// registrations (discovery's), logged as one line. Before the replica
// runs and the registry is watched.
func (s *Serve) resetStates(ctx context.Context, conn *eventplane.Conn, rep *replica.Replica, model string) error {
	st, err := rep.Reset(ctx, s.cfg.ResetForce)
	if err != nil {
		return fmt.Errorf("serve: --reset-states: %w", err)
	}
	workers, err := discovery.NewRegistry(conn, discovery.RegistryConfig{Logger: s.log}).Purge(ctx, model)
	if err != nil {
		return fmt.Errorf("serve: --reset-states: %w", err)
	}
	s.log.Warn("reset states: started clean", "model", model, "events_purged", st.Events,
		"snapshots_deleted", st.Snapshots, "registrations_deleted", workers,
		"forced_over_lease_holder", st.Holder)
	return nil
}
