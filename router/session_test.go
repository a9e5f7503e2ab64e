package router_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/kvrouter/kvrouter/router"
)

// Session ids are client input: a long one is refused (locally and from
// another replica), and a flood of distinct ones, local and remote, holds
// at most MaxSessions bindings within MaxBytes. Before: 300 ids of 1 MiB
// each were held (and shared) for the whole TTL.
func TestSessionBounds(t *testing.T) {
	p := newPair(t, func(c *router.Config) {
		c.Affinity.Enabled = true
		c.Affinity.MaxSessions = 50
		c.Affinity.MaxBytes = 20 << 10
		c.Affinity.MaxIDBytes = 256
	})
	ctx := context.Background()
	long := strings.Repeat("x", 257)
	if _, err := p.a.Route(ctx, router.Request{ID: "l", Session: long, Tokens: tokens(8, 1)}, t0); !errors.Is(err, router.ErrBadRequest) ||
		!errors.Is(err, router.ErrSessionID) {
		t.Fatalf("a 257-byte session id: %v; want ErrBadRequest, ErrSessionID", err)
	}
	if err := p.b.ApplyRemote("A", router.Booking{Kind: router.BookBind, Session: long}, t0); !errors.Is(err, router.ErrSessionID) {
		t.Fatalf("a remote bind of a 257-byte session id: %v", err)
	}
	for i := range 300 {
		id := fmt.Sprintf("r%d", i)
		s := fmt.Sprintf("%0256d", i)
		if _, err := p.a.Route(ctx, router.Request{ID: id, Session: s, Tokens: tokens(8, i)}, t0); err != nil {
			t.Fatal(err)
		}
		if err := p.a.Free(id, t0); err != nil {
			t.Fatal(err)
		}
	}
	p.deliver(t, t0)
	for _, r := range []*router.Router{p.a, p.b} {
		st := r.AffinityStats()
		if st.Sessions > 50 || st.Bytes > 20<<10 || st.Evicted == 0 {
			t.Fatalf("%d sessions, %d bytes, %d evicted; want <= 50, <= 20 KiB, some evicted", st.Sessions, st.Bytes, st.Evicted)
		}
	}
}
