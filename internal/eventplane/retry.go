package eventplane

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
)

// Backoff between connection attempts to an external server (ConnectRetry):
// it starts at connectBackoffMin and doubles up to connectBackoffMax, so a
// NATS that comes up late is found within 5 s of coming up, and a router
// waiting for it costs at most one dial per 5 s.
const (
	connectBackoffMin = 100 * time.Millisecond
	connectBackoffMax = 5 * time.Second
)

// ConnectRetry is Connect that waits for an external server that is not
// up yet: a failed attempt is retried with capped backoff until ctx is
// done. onRetry (may be nil) is called after each failed attempt (from 1)
// with its error, before the wait. Errors that waiting cannot fix return
// at once: an invalid configuration, and the server refusing the
// credentials. The embedded server (cfg.URL empty) is started once.
func ConnectRetry(ctx context.Context, cfg Config, onRetry func(attempt int, err error)) (*Conn, error) {
	if cfg.URL == "" {
		return Connect(ctx, cfg)
	}
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	backoff := connectBackoffMin
	for attempt := 1; ; attempt++ {
		c, err := Connect(ctx, cfg)
		if err == nil {
			return c, nil
		}
		if permanent(err) {
			return nil, err
		}
		if onRetry != nil {
			onRetry(attempt, err)
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("eventplane: connect %s: gave up after %d attempts: %w (last: %w)", cfg.URL, attempt, ctx.Err(), err)
		case <-t.C:
		}
		backoff = min(2*backoff, connectBackoffMax)
	}
}

// permanent reports whether a connection error will not go away by
// waiting.
func permanent(err error) bool {
	return errors.Is(err, nats.ErrAuthorization) || errors.Is(err, nats.ErrAuthExpired) ||
		errors.Is(err, nats.ErrAuthRevoked) || errors.Is(err, nats.ErrAccountAuthExpired)
}
