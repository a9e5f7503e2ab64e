package replica_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/indexer"
	"github.com/kvrouter/kvrouter/internal/eventplane/eventplanetest"
	"github.com/kvrouter/kvrouter/internal/replica"
	"github.com/prometheus/client_golang/prometheus"
)

// TestLeaseRetakenAfterBucketDeleted: the lease bucket disappears under a
// holder (NATS lost its state). The holder's renewals fail, it drops the
// cached bucket handle, creates the bucket again and takes the lease
// again; the failures are counted. Before: the cached handle named a
// bucket nobody recreated, and the lease stayed unheld for good.
func TestLeaseRetakenAfterBucketDeleted(t *testing.T) {
	conn := eventplanetest.Embedded(t)
	var leaders atomic.Int32
	a := campaign(t, conn, "a", &leaders)
	defer a.stop()
	eventplanetest.WaitFor(t, 10*time.Second, "a leads", func() bool { return a.leading.Load() == 1 })
	if err := conn.JS.DeleteKeyValue(context.Background(), "test_leases"); err != nil {
		t.Fatal(err)
	}
	eventplanetest.WaitFor(t, 20*time.Second, "a leads again", func() bool { return a.terms.Load() == 2 && a.l.Held() })
	if st := a.l.Stats(); st.Errors == 0 || st.Acquired != 2 {
		t.Fatalf("stats %+v: want 2 acquisitions and the failures counted", st)
	}
	if h, err := a.l.Holder(context.Background()); err != nil || h != "a" {
		t.Fatalf("holder %q, %v", h, err)
	}
}

// TestSnapshotsResumeAfterFreshStore: the NATS server restarts with an
// empty store (the lease bucket, the snapshot bucket and the stream are
// gone). The replica takes the lease again and writes snapshots again.
// Before: lease=false for good, no snapshot ever again, nothing counted.
func TestSnapshotsResumeAfterFreshStore(t *testing.T) {
	port := eventplanetest.FreePort(t)
	srv := eventplanetest.Server(t, port)
	url := srv.ClientURL()
	router, worker := eventplanetest.Dial(t, url), eventplanetest.Dial(t, url)
	r := startNode(t, router, fastConfig("r"))
	pub := startPublisher(t, worker)
	g := eventplanetest.NewGen(5, 3, 1)
	feed(t, pub, g, indexer.NewRadix(indexer.RadixConfig{}), 50)
	eventplanetest.WaitFor(t, 30*time.Second, "a snapshot written", func() bool {
		st := r.rep.Status()
		return st.LeaseHeld && st.Snapshots > 0
	})

	srv.Close()
	srv = eventplanetest.Server(t, port)
	t.Cleanup(srv.Close)
	if err := srv.JS.DeleteStream(context.Background(), srv.Stream().Name); err != nil {
		t.Fatal(err)
	}
	before := r.rep.Status().Snapshots
	eventplanetest.WaitFor(t, 30*time.Second, "lease lost or failing", func() bool {
		st := r.rep.Status()
		return !st.LeaseHeld || st.LeaseErrors > 0
	})
	// New events on the new stream give the writer something to save.
	feed(t, pub, g, indexer.NewRadix(indexer.RadixConfig{}), 50)
	eventplanetest.WaitFor(t, 60*time.Second, "lease held and snapshots written again", func() bool {
		st := r.rep.Status()
		return st.LeaseHeld && st.Snapshots > before && st.Ready
	})
	if st := r.rep.Status(); st.LastSnapshot.IsZero() {
		t.Fatalf("status %+v: no last snapshot time", st)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(replica.NewCollector(r.rep))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		m := mf.GetMetric()[0]
		got[mf.GetName()] = m.GetGauge().GetValue() + m.GetCounter().GetValue()
	}
	if got["kvrouter_replica_lease_held"] != 1 || got["kvrouter_replica_lease_errors_total"] == 0 ||
		got["kvrouter_replica_last_snapshot_timestamp_seconds"] == 0 {
		t.Fatalf("metrics %v", got)
	}
}
