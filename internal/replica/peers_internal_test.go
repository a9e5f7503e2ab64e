package replica

import (
	"strings"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/internal/eventplane/loadsync"
	"github.com/kvrouter/kvrouter/router"
)

type nopTarget struct{ applied int }

func (t *nopTarget) ApplyRemote(string, router.Booking, time.Time) error { t.applied++; return nil }
func (t *nopTarget) DropOrigin(string) int                               { return 0 }

// TestPeersBounded: the replicas tracked are the bounded store
// "replica_peers": a message from a new origin beyond MaxPeers is
// refused until a peer expires; a known origin is still heard.
func TestPeersBounded(t *testing.T) {
	cfg := DefaultSyncConfig()
	cfg.MaxPeers = 2
	ls, err := NewLoadSync(nil, cfg, "me")
	if err != nil {
		t.Fatal(err)
	}
	tg := &nopTarget{}
	ls.target = tg
	free := &loadsync.Message{Kind: loadsync.KindFree, Request: "r", Worker: 1}
	for _, o := range []string{"a", "b", "c", "a"} {
		ls.ApplyRemote(o, free)
	}
	if n := len(ls.Peers()); n != 2 || tg.applied != 3 {
		t.Fatalf("%d peers tracked, %d messages applied; want 2 (MaxPeers) and 3 (c refused)", n, tg.applied)
	}
	st := ls.PeerStore()
	if n, b := st.Size(); n != 2 || b != 2*(1+peerCost) {
		t.Errorf("replica_peers holds %d entries, %d bytes; want 2, %d", n, b, 2*(1+peerCost))
	}
	if me, mb := st.Limits(); me != 2 || mb != 2*(loadsync.MaxOriginBytes+peerCost) {
		t.Errorf("replica_peers limits %d, %d", me, mb)
	}
	ls.expire(time.Now().Add(time.Hour))
	if n, b := st.Size(); n != 0 || b != 0 {
		t.Errorf("after every peer expired: %d entries, %d bytes", n, b)
	}
	ls.ApplyRemote("c", free)
	if n := len(ls.Peers()); n != 1 {
		t.Errorf("a new origin once there is room: %d peers", n)
	}
	cfg.Origin = strings.Repeat("o", loadsync.MaxOriginBytes+1)
	if err := cfg.Validate(); err == nil {
		t.Errorf("an origin the others would refuse was accepted")
	}
}
