package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Loads reads GET /debug/router: one line per worker with the router's
// load view, then (indented) one line per active request it tracks, its
// own and those learnt from other replicas through load sync.
func (r *Router) Loads(ctx context.Context) (string, error) {
	status, body, err := httpGet(r.URL() + "/debug/router")
	if err != nil {
		return "", err
	}
	if status != http.StatusOK {
		return "", fmt.Errorf("%s /debug/router: %d %s", r.Name, status, body)
	}
	return body, nil
}

// WaitRoutersIdle waits until no router tracks an active request, its own
// or another replica's. A replica learns that another's request finished
// through load sync, batched and separate from the KV event stream, so it
// may still count a finished request's load after its index caught up;
// until then it may rightly prefer an idle worker to a cache hit.
func (f *Fleet) WaitRoutersIdle(t testing.TB, timeout time.Duration) {
	t.Helper()
	WaitFor(t, timeout, "the routers to track no active request", func() (bool, string) {
		for _, r := range f.Routers {
			s, err := r.Loads(context.Background())
			if err != nil {
				return false, err.Error()
			}
			for _, line := range strings.Split(s, "\n") {
				if strings.HasPrefix(line, "  ") {
					return false, r.Name + ":\n" + s
				}
			}
		}
		return true, ""
	})
}
