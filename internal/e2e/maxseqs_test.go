package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestMaxNumSeqsThroughBinaries: `kvrouter mocker --max-num-seqs 37`
// registers its cap in NATS, and `kvrouter serve --worker-max-num-seqs 48`
// routes it with 37 and gives 48 to a static worker that names none, as
// GET /debug/index reports.
func TestMaxNumSeqsThroughBinaries(t *testing.T) {
	skipShort(t)
	n := StartNATS(t, bins.NATSServer)
	StartMocker(t, bins.Kvrouter, 3, n.URL(), "--max-num-seqs", "37")
	r := StartRouter(t, bins.Kvrouter, "router", n.URL(), "--worker-max-num-seqs", "48",
		"--worker", "http://127.0.0.1:9,id=9", "--load-poll", "-1ns")
	r.WaitReady(t, 60*time.Second)
	WaitFor(t, 30*time.Second, "the router knows both caps", func() (bool, string) {
		d, err := r.Index(context.Background())
		if err != nil {
			return false, err.Error()
		}
		caps := map[uint64]int{}
		for _, w := range d.Workers {
			if w.Rank == 0 {
				caps[w.Worker] = w.MaxNumSeqs
			}
		}
		return len(caps) == 2 && caps[3] == 37 && caps[9] == 48, fmt.Sprintf("caps %v, want 3:37 9:48", caps)
	})
}
