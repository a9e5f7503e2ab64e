package eventplane

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// PurgeModel deletes model's KV events (EventFilter(model)) from the
// stream, the other models' stay, and returns how many it held. A start
// from clean state (serve --reset-states) calls it before subscribing.
func (c *Conn) PurgeModel(ctx context.Context, model string) (uint64, error) {
	name := c.cfg.Stream.Name
	st, err := c.JS.Stream(ctx, name)
	if err != nil {
		return 0, fmt.Errorf("eventplane: purge stream %s: %w", name, err)
	}
	filter := c.EventFilter(model)
	info, err := st.Info(ctx, jetstream.WithSubjectFilter(filter))
	if err != nil {
		return 0, fmt.Errorf("eventplane: purge stream %s: %w", name, err)
	}
	var n uint64
	for _, k := range info.State.Subjects {
		n += k
	}
	if err := st.Purge(ctx, jetstream.WithPurgeSubject(filter)); err != nil {
		return 0, fmt.Errorf("eventplane: purge %s from stream %s: %w", filter, name, err)
	}
	return n, nil
}
