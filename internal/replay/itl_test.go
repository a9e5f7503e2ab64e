package replay

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/trace"
)

// A stream whose chunks arrive in bursts (as the stack delivers them when
// the cores are busy) has an ITL of its decode time over its chunks, not
// the p50 of 0.0ms half its gaps gave: replay --compare printed "itl p50
// 0.0ms" for load and round-robin.
func TestITLOfBurstyStream(t *testing.T) {
	const bursts, gap = 5, 20 * time.Millisecond
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/completions" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		for b := range bursts {
			if b > 0 {
				// The pause is the workload: the time between two bursts.
				select {
				case <-r.Context().Done():
					return
				case <-time.After(gap):
				}
			}
			for range 2 {
				fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"text\":\"x\"}]}\n\n")
			}
			fl.Flush()
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv.Listener = ln
	srv.Start()
	defer srv.Close()
	recs := []trace.Record{{InputLength: 64, OutputLength: 2 * bursts, HashIDs: []uint64{1}}}
	rep, err := Run(context.Background(), Config{URL: srv.URL, Records: recs, Pacer: Unpaced(), TokensPerID: 64})
	if err != nil {
		t.Fatal(err)
	}
	// 10 chunks over at least 4 gaps of 20ms: a mean of at least 80/9 ms.
	if rep.OK != 1 || rep.ITL.N != 1 || rep.ITL.P50 < 8 {
		t.Errorf("ok %d, itl %+v: want one request's mean, >= 8ms", rep.OK, rep.ITL)
	}
}
