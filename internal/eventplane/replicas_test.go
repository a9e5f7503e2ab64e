package eventplane_test

import (
	"context"
	"testing"

	"github.com/kvrouter/kvrouter/internal/eventplane"
	"github.com/kvrouter/kvrouter/internal/eventplane/eventplanetest"
	"github.com/nats-io/nats.go/jetstream"
)

// Replicas unset: a missing stream is created with 1 and an existing one
// keeps its own. (A single server holds only R1; the 3-node cluster test
// in internal/e2e shows that an R3 stream and bucket are kept.)
func TestReplicas(t *testing.T) {
	ctx := context.Background()
	conn := eventplanetest.Embedded(t)
	if got := conn.Stream().Replicas; got != 0 {
		t.Fatalf("default Stream.Replicas = %d, want 0 (keep existing)", got)
	}
	r, err := conn.Replicas(ctx, "KV_nope")
	if err != nil || r != 1 {
		t.Fatalf("Replicas(missing) = %d, %v; want 1", r, err)
	}
	st, err := conn.JS.Stream(ctx, conn.Stream().Name)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.CachedInfo().Config.Replicas; got != 1 {
		t.Fatalf("events stream created with %d replicas, want 1", got)
	}
	if _, err := conn.JS.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "b"}); err != nil {
		t.Fatal(err)
	}
	if r, err := conn.Replicas(ctx, "KV_b"); err != nil || r != 1 {
		t.Fatalf("Replicas(existing R1) = %d, %v; want 1", r, err)
	}

}

func TestReplicasValidate(t *testing.T) {
	c := eventplane.DefaultConfig()
	c.Stream.Replicas = 6
	if c.Validate() == nil {
		t.Error("Replicas 6 accepted; JetStream allows at most 5")
	}
	c.Stream.Replicas = 3 // the embedded server is a single node
	if c.Validate() == nil {
		t.Error("Replicas 3 accepted for the embedded server")
	}
	c.URL = "nats://127.0.0.1:4222"
	if err := c.Validate(); err != nil {
		t.Errorf("Replicas 3 on an external server: %v", err)
	}
}
