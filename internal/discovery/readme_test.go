package discovery_test

import (
	"testing"

	"github.com/kvrouter/kvrouter/internal/discovery"
)

// TestParseWorkerFlagREADME parses the --worker value of the static-fleet
// example in docs/engines.md ("Fleets: NATS or static"; the bs= shorthand
// included).
func TestParseWorkerFlagREADME(t *testing.T) {
	w, err := discovery.ParseWorkerFlag("http://10.0.0.5:8000,id=1,zmq=tcp://10.0.0.5:5557,replay=tcp://10.0.0.5:5558,bs=16")
	if err != nil {
		t.Fatal(err)
	}
	if w.ID != 1 || w.URL != "http://10.0.0.5:8000" || w.EventEndpoint != "tcp://10.0.0.5:5557" ||
		w.ReplayEndpoint != "tcp://10.0.0.5:5558" || w.BlockSize != 16 {
		t.Fatalf("got %+v", w)
	}
}
