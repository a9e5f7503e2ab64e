package eventplane

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Connect waits out what a cluster electing a leader answers, and fails at
// once on the rest.
func TestTransient(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("eventplane: stream X: %w", context.DeadlineExceeded), true},
		{nats.ErrTimeout, true},
		{nats.ErrNoResponders, true},
		{jetstream.ErrJetStreamNotEnabled, true},
		{fmt.Errorf("wrapped: %w", &jetstream.APIError{Code: 503, Description: "JetStream system temporarily unavailable"}), true},
		{&jetstream.APIError{Code: 500, ErrorCode: 10074, Description: "replicas > 1 not supported in non-clustered mode"}, false},
		{&jetstream.APIError{Code: 400, Description: "subjects overlap with an existing stream"}, false},
		{errors.New("nats: authorization violation"), false},
	} {
		if got := transient(tc.err); got != tc.want {
			t.Errorf("transient(%v) = %t, want %t", tc.err, got, tc.want)
		}
	}
}
