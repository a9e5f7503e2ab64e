package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/internal/eventplane"
	"github.com/kvrouter/kvrouter/internal/eventplane/eventplanetest"
	"github.com/kvrouter/kvrouter/internal/snapshot"
	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// replicaStatus is the replica part of a /readyz body (replica.Status).
type replicaStatus struct {
	Ready                   bool
	Lag, Applied            uint64
	StreamFirst, StreamLast uint64
	Restored                uint64
	Lease                   bool
	Snapshots               uint64
	Body                    string
}

var statusRE = regexp.MustCompile(`: (ready|catching up): lag=(\d+) applied=(\d+) stream=(\d+)\.\.(\d+) restored=(\d+) lease=(true|false) snapshots=(\d+)`)

// parseStatus reads the replica status out of a /readyz body (false when
// the body has none: a router without NATS, or not started).
func parseStatus(body string) (replicaStatus, bool) {
	m := statusRE.FindStringSubmatch(body)
	if m == nil {
		return replicaStatus{Body: body}, false
	}
	n := func(i int) uint64 { v, _ := strconv.ParseUint(m[i], 10, 64); return v }
	return replicaStatus{Ready: m[1] == "ready", Lag: n(2), Applied: n(3), StreamFirst: n(4), StreamLast: n(5),
		Restored: n(6), Lease: m[7] == "true", Snapshots: n(8), Body: body}, true
}

// status asks r's /readyz for its replica status.
func (r *Router) status() (replicaStatus, error) {
	code, body, err := r.Get("/readyz")
	if err != nil {
		return replicaStatus{}, err
	}
	st, ok := parseStatus(body)
	if !ok {
		return st, fmt.Errorf("%s /readyz %d without a replica status: %q", r.Name, code, body)
	}
	return st, nil
}

// jsConn connects a plain JetStream client to url (no stream created or
// changed: the test only reads).
func jsConn(t *testing.T, url string) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(url, nats.MaxReconnects(-1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// streamLast is the KV event stream's last sequence.
func streamLast(t *testing.T, js jetstream.JetStream) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := js.Stream(ctx, "KVROUTER_EVENTS")
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return info.State.LastSeq
}

// waitSnapshot waits until some router of f holds the writer lease and has
// written a snapshot; it returns that router.
func waitSnapshot(t *testing.T, f *Fleet, timeout time.Duration) *Router {
	t.Helper()
	var holder *Router
	WaitFor(t, timeout, "a snapshot by the lease holder", func() (bool, string) {
		var bodies []string
		for _, r := range f.Routers {
			st, err := r.status()
			if err != nil {
				return false, err.Error()
			}
			if st.Lease && st.Snapshots > 0 {
				holder = r
				return true, ""
			}
			bodies = append(bodies, st.Body)
		}
		return false, strings.Join(bodies, " | ")
	})
	return holder
}

// stopTraffic stops tr and fails on a request that was never answered.
func stopTraffic(t *testing.T, tr *traffic, stop chan struct{}) {
	t.Helper()
	close(stop)
	tr.wg.Wait()
	close(tr.errs)
	for err := range tr.errs {
		t.Fatal(err)
	}
	ok, failed := tr.counts()
	t.Logf("traffic: %d answered, %d failed attempts retried", ok, failed)
}

// TestReplicaKilledRestoresSnapshot: 3 mockers and 2 router replicas on
// an external nats-server (killing a replica leaves NATS up), snapshots
// every second. Mid-traffic one replica (not the snapshot writer) is
// killed with SIGKILL and restarted: polled on /readyz from its start, it
// is never 200 before it restored a snapshot and applied the stream up to
// where it stood when the process started (the first 200's status has
// restored > 0 and applied >= that sequence), its log says it restored a
// snapshot, and once traffic stops both replicas hold the same index
// (equal /debug/index dump_hash), equal to what the workers cache.
func TestReplicaKilledRestoresSnapshot(t *testing.T) {
	skipShort(t)
	n := StartNATS(t, bins.NATSServer)
	js := jsConn(t, n.URL())
	f := StartFleet(t, bins.Kvrouter, FleetConfig{NATSURL: n.URL(), Mockers: 3, Routers: 2,
		ServeArgs: []string{"--snapshot-interval", "1s"}})
	ctx := context.Background()
	stop := make(chan struct{})
	tr := startTraffic(ctx, f, 100, stop)
	tr.waitAnswered(t, 20, 30*time.Second)
	writer := waitSnapshot(t, f, 20*time.Second)
	victim := f.Routers[0]
	if victim == writer {
		victim = f.Routers[1]
	}
	tr.waitAnswered(t, 10, 30*time.Second)

	t.Logf("killing %s with SIGKILL (the snapshot writer is %s)", victim.Name, writer.Name)
	victim.Kill()
	tr.waitAnswered(t, 5, 30*time.Second) // through the other replica meanwhile
	atStart := streamLast(t, js)
	victim.Restart(t)
	var first replicaStatus
	not200 := 0
	WaitFor(t, 30*time.Second, victim.Name+" /readyz 200", func() (bool, string) {
		if victim.Proc.Exited() {
			t.Fatal(victim.Proc.ExitReport())
		}
		code, body, err := victim.Get("/readyz")
		if err != nil {
			return false, err.Error() // not listening yet
		}
		if code != http.StatusOK {
			if code != http.StatusServiceUnavailable {
				t.Fatalf("%s /readyz %d %q, want 503 until ready", victim.Name, code, body)
			}
			not200++
			return false, body
		}
		st, ok := parseStatus(body)
		if !ok {
			t.Fatalf("%s /readyz 200 without a replica status: %q", victim.Name, body)
		}
		first = st
		return true, ""
	})
	t.Logf("%s: first 200 after %d answers of 503: %s", victim.Name, not200, strings.TrimSpace(first.Body))
	if first.Restored == 0 {
		t.Errorf("%s ready without restoring a snapshot: %s", victim.Name, first.Body)
	}
	if first.Applied < atStart {
		t.Errorf("%s ready at applied=%d, before the stream's last sequence %d at its start: %s", victim.Name, first.Applied, atStart, first.Body)
	}
	if log := victim.Proc.Log(logTail); !strings.Contains(log, "index restored from snapshot") {
		t.Errorf("%s's log does not say it restored a snapshot:\n%s", victim.Name, log)
	}
	f.WaitRouter(t, victim, 30*time.Second)
	tr.waitAnswered(t, 10, 30*time.Second)
	stopTraffic(t, tr, stop)

	key := f.WaitIndexesAgree(t, 20*time.Second)
	if !strings.HasPrefix(key, "hash ") {
		t.Fatalf("routers report no dump_hash: %q", key)
	}
	f.WaitIndexesMatchMockers(t, 20*time.Second)
	t.Logf("both replicas hold %s", key)
}

// TestReplicaSnapshotWriterKilled: 2 replicas on an external nats-server,
// snapshots every 500ms, lease TTL 2s. The snapshot writer (the replica
// whose /readyz says lease=true) is killed with SIGKILL; the other takes
// the lease over and writes snapshots (its status says lease=true with
// snapshots > 0, and the object store holds a snapshot newer than the
// kill). The killed one, restarted, restores and agrees with it.
func TestReplicaSnapshotWriterKilled(t *testing.T) {
	skipShort(t)
	n := StartNATS(t, bins.NATSServer)
	js := jsConn(t, n.URL())
	f := StartFleet(t, bins.Kvrouter, FleetConfig{NATSURL: n.URL(), Mockers: 3, Routers: 2,
		ServeArgs: []string{"--snapshot-interval", "500ms", "--lease-ttl", "2s"}})
	ctx := context.Background()
	affinityAcrossReplicas(t, f, 1, 2) // the stream moves: something to snapshot
	writer := waitSnapshot(t, f, 20*time.Second)
	other := f.Routers[0]
	if other == writer {
		other = f.Routers[1]
	}
	if st, err := other.status(); err != nil || st.Lease {
		t.Fatalf("%s holds the lease too, or no status (%v): %s", other.Name, err, st.Body)
	}

	t.Logf("killing the snapshot writer %s with SIGKILL", writer.Name)
	writer.Kill()
	killed := time.Now()
	// Traffic through the survivor moves the stream, so it has something
	// to snapshot once it holds the lease.
	stop := make(chan struct{})
	tr := startTraffic(ctx, &Fleet{Mockers: f.Mockers, Routers: []*Router{other}}, 200, stop)
	WaitFor(t, 30*time.Second, other.Name+" to take the lease over and write a snapshot", func() (bool, string) {
		st, err := other.status()
		if err != nil {
			return false, err.Error()
		}
		return st.Lease && st.Snapshots > 0, st.Body
	})
	stopTraffic(t, tr, stop)

	obs, err := js.ObjectStore(ctx, "kvrouter_snapshots")
	if err != nil {
		t.Fatal(err)
	}
	infos, err := obs.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	newer := 0
	for _, o := range infos {
		if o.ModTime.After(killed) {
			newer++
		}
	}
	if newer == 0 || len(infos) > 3 {
		t.Errorf("object store: %d snapshots, %d written after the kill; want some newer and at most 3 kept", len(infos), newer)
	}

	writer.Restart(t)
	f.WaitRouter(t, writer, 30*time.Second)
	if st, err := writer.status(); err != nil || st.Restored == 0 {
		t.Errorf("%s ready without restoring a snapshot (%v): %s", writer.Name, err, st.Body)
	}
	key := f.WaitIndexesAgree(t, 20*time.Second)
	f.WaitIndexesMatchMockers(t, 20*time.Second)
	t.Logf("both replicas hold %s", key)
}

// streamReplicas is the replication factor of JetStream stream name
// (asked until the cluster answers).
func streamReplicas(t *testing.T, js jetstream.JetStream, name string) int {
	t.Helper()
	replicas := 0
	WaitFor(t, 20*time.Second, "stream info of "+name, func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s, err := js.Stream(ctx, name)
		if err != nil {
			return false, err.Error()
		}
		info, err := s.Info(ctx)
		if err != nil {
			return false, err.Error()
		}
		replicas = info.Config.Replicas
		return true, ""
	})
	return replicas
}

// TestReplicasNATSClusterSnapshots: 3 mockers and 2 router replicas
// started with --stream-replicas 3 on a 3-node JetStream cluster (stream
// and registry created beforehand with 3 replicas): the routers create the
// lease bucket and the snapshot object store with 3 replicas and keep the
// stream's and registry's at 3. Mid-traffic the stream's
// leader node is killed with SIGKILL and restarted, then a router replica
// is killed and restarted: it restores a snapshot from the replicated
// store, and both replicas end with equal dump hashes that match the
// workers' caches (no KV event lost).
func TestReplicasNATSClusterSnapshots(t *testing.T) {
	skipShort(t)
	c := StartNATSCluster(t, bins.NATSServer, 3)
	js := jsConn(t, c.URL())
	ctx := context.Background()
	// The stream and the worker registry exist before any process starts,
	// with 3 replicas; the routers create the lease bucket and the
	// snapshot store themselves, with 3 replicas.
	conn, ecfg := replicatedStreams(t, c.URL())
	f := StartFleet(t, bins.Kvrouter, FleetConfig{NATSURL: c.URL(), Mockers: 3, Routers: 2,
		ServeArgs: []string{"--stream-replicas", "3", "--snapshot-interval", "1s"}})
	t.Cleanup(func() {
		if t.Failed() {
			logEventFlow(t, conn, ecfg.Stream.Name, f)
			for _, r := range f.Routers {
				_, body, err := r.Get("/readyz")
				t.Logf("%s /readyz (%v): %s", r.Name, err, body)
			}
		}
	})
	stop := make(chan struct{})
	tr := startTraffic(ctx, f, 100, stop)
	tr.waitAnswered(t, 20, 30*time.Second)
	writer := waitSnapshot(t, f, 30*time.Second)
	for _, name := range []string{"KVROUTER_EVENTS", "KV_kvrouter_workers", "KV_kvrouter_replicas", "OBJ_kvrouter_snapshots"} {
		if r := streamReplicas(t, js, name); r != 3 {
			t.Errorf("%s has %d replicas, want 3 (--stream-replicas 3)", name, r)
		}
	}

	info, err := func() (*jetstream.StreamInfo, error) {
		s, err := js.Stream(ctx, "KVROUTER_EVENTS")
		if err != nil {
			return nil, err
		}
		return s.Info(ctx)
	}()
	if err != nil {
		t.Fatal(err)
	}
	var node *NATSNode
	for _, n := range c.Nodes {
		if info.Cluster != nil && n.Name == info.Cluster.Leader {
			node = n
		}
	}
	if node == nil {
		t.Fatalf("no node of the cluster leads the stream: %+v", info.Cluster)
	}
	t.Logf("killing NATS node %s (stream leader) with SIGKILL", node.Name)
	node.Kill()
	tr.waitAnswered(t, 20, 45*time.Second)
	node.Restart(t, 30*time.Second)
	c.WaitMetaLeader(t, 30*time.Second)

	victim := f.Routers[0]
	if victim == writer {
		victim = f.Routers[1]
	}
	t.Logf("killing router %s with SIGKILL (the snapshot writer is %s)", victim.Name, writer.Name)
	victim.Kill()
	victim.Restart(t)
	f.WaitRouter(t, victim, 30*time.Second)
	if st, err := victim.status(); err != nil || st.Restored == 0 {
		t.Errorf("%s ready without restoring a snapshot (%v): %s", victim.Name, err, st.Body)
	}
	tr.waitAnswered(t, 10, 30*time.Second)
	stopTraffic(t, tr, stop)

	// Matching the workers first: on failure it says which replica holds
	// how many blocks of which worker.
	f.WaitIndexesMatchMockers(t, 30*time.Second)
	key := f.WaitIndexesAgree(t, 10*time.Second)
	t.Logf("both replicas hold %s", key)
}

// BenchmarkServeColdStart measures a `kvrouter serve` replica's cold start
// with the real binary: from process start to its first /readyz 200,
// restoring a snapshot of 1M blocks (16 workers, 64-block events, written
// beforehand into the object store) and replaying 100k stream events of 4
// blocks after it, on an external nats-server. The router has one static
// worker (never contacted) so that /readyz waits for the index only.
//
//	go test -run '^$' -bench ServeColdStart -benchtime 3x ./internal/e2e/
func BenchmarkServeColdStart(b *testing.B) {
	if testing.Short() {
		b.Skip("end-to-end")
	}
	const blocks, replay, workers, perEvent = 1_000_000, 100_000, 16, 64
	n := StartNATS(b, bins.NATSServer)
	ctx := context.Background()
	ecfg := eventplane.DefaultConfig()
	ecfg.URL = n.URL()
	conn, err := eventplane.Connect(ctx, ecfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(conn.Close)
	gen := eventplanetest.NewTrees(rand.New(rand.NewPCG(1, 2)))
	next := gen.Next
	snap := &snapshot.Snapshot{Position: eventplane.Position{LastIDs: map[kvevents.Worker]uint64{}}, Created: time.Now()}
	for i := range blocks / perEvent {
		snap.Events = append(snap.Events, next(kvevents.Worker{ID: uint64(1 + i%workers)}, perEvent))
	}
	for w, id := range gen.Last {
		snap.Position.LastIDs[w] = id
	}
	if err := snapshot.NewManager(conn, snapshot.Config{}).Save(ctx, snap); err != nil {
		b.Fatal(err)
	}
	pub := eventplane.NewPublisher(conn, eventplane.PublisherConfig{Model: Model})
	pctx, stop := context.WithCancel(ctx)
	pubDone := make(chan error, 1)
	go func() { pubDone <- pub.Run(pctx) }()
	for i := range replay {
		if err := pub.Publish(ctx, next(kvevents.Worker{ID: uint64(1 + i%workers)}, 4)); err != nil {
			b.Fatal(err)
		}
	}
	if err := pub.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	stop()
	<-pubDone

	b.ResetTimer()
	for i := range b.N {
		r := StartRouter(b, bins.Kvrouter, "router"+strconv.Itoa(i), n.URL(),
			"--worker", "http://127.0.0.1:1", "--snapshot-interval", "0", "--load-poll", "-1s")
		r.WaitReady(b, 2*time.Minute)
		b.StopTimer()
		st, err := r.status()
		// The snapshot covers no stream message: its sequence (restored=)
		// is 0, so the log says whether it was restored.
		if err != nil || st.Lag != 0 || !strings.Contains(r.Proc.Log(logTail), "restored_events="+strconv.Itoa(blocks/perEvent)) {
			b.Fatalf("ready with a lag or without the snapshot (%v): %s\n%s", err, st.Body, r.Proc.Log(logTail))
		}
		if d, err := r.Index(ctx); err != nil || d.Blocks(1)+d.Blocks(2) == 0 {
			b.Fatalf("index: %v", err)
		}
		_ = r.Proc.Stop()
		b.StartTimer()
	}
}
