package e2e

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/internal/eventplane"
	"github.com/nats-io/nats.go/jetstream"
)

// bins are built once by TestMain (empty under -short) from root.
var (
	bins Binaries
	root string
)

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "kvrouter-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	bins, err = Build(ctx, dir)
	if err == nil {
		root, err = ModuleRoot(ctx)
	}
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// skipShort skips under -short; otherwise it makes the test's cached
// result depend on every source file (see StatSources).
func skipShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end: starts real kvrouter and nats-server processes; skipped with -short")
	}
	if err := StatSources(root); err != nil {
		t.Fatal(err)
	}
}

var words = strings.Fields(`alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima
	mike november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu`)

// document is a deterministic prompt of about n words, different for each
// id, so distinct documents share no blocks and a repeat shares them all.
func document(id, n int) string {
	rng := rand.New(rand.NewPCG(uint64(id), 0xe2e))
	var b strings.Builder
	fmt.Fprintf(&b, "Document %d.", id)
	for range n {
		b.WriteByte(' ')
		b.WriteString(words[rng.IntN(len(words))])
	}
	return b.String()
}

// affinityAcrossReplicas sends each document once through one replica,
// waits until both replicas' indexes hold what the workers cache, and sends
// it again through the other: the repeat must go to the same worker and report cached blocks.
func affinityAcrossReplicas(t *testing.T, f *Fleet, firstDoc, docs int) {
	t.Helper()
	ctx := context.Background()
	for i := range docs {
		doc := document(firstDoc+i, 300)
		a, b := f.Routers[i%2], f.Routers[(i+1)%2]
		first, err := a.Complete(ctx, doc, 4)
		if err != nil {
			t.Fatal(err)
		}
		// Agreement alone could be on the state before the new events;
		// matching the mockers' caches means both replicas applied them.
		f.WaitIndexesMatchMockers(t, 20*time.Second)
		// The index is not all: a replica still counting the first
		// request's load (its free not yet heard through load sync) rightly
		// prefers an idle worker to the cache hit.
		f.WaitRoutersIdle(t, 20*time.Second)
		loads, _ := b.Loads(ctx) // for the log only
		again, err := b.Complete(ctx, doc, 4)
		if err != nil {
			t.Fatal(err)
		}
		if again.Overlap == 0 || again.Worker != first.Worker {
			t.Fatalf("document %d: first via %s to worker %d (overlap %d); repeat via %s to worker %d with overlap %d, want the same worker and overlap > 0; %s before the repeat:\n%s",
				firstDoc+i, a.Name, first.Worker, first.Overlap, b.Name, again.Worker, again.Overlap, b.Name, loads)
		}
	}
}

// traffic sends requests from two clients, one per replica, until stop is
// closed: new documents and repeats. Each request is retried until answered
// (bounded by 20 s); the first request that never gets an answer is
// reported on errs. ok counts answered requests.
type traffic struct {
	ok, failed int
	mu         sync.Mutex
	errs       chan error
	wg         sync.WaitGroup
}

func startTraffic(ctx context.Context, f *Fleet, firstDoc int, stop <-chan struct{}) *traffic {
	tr := &traffic{errs: make(chan error, len(f.Routers))}
	for ri, r := range f.Routers {
		tr.wg.Add(1)
		go func() {
			defer tr.wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				id := firstDoc + 1000*ri + i
				if i%3 == 2 {
					id = firstDoc + 1000*ri + i - 2 // a repeat
				}
				_, failed, err := r.CompleteRetry(ctx, document(id, 200), 4, 20*time.Second)
				tr.mu.Lock()
				tr.failed += failed
				if err == nil {
					tr.ok++
				}
				tr.mu.Unlock()
				if err != nil {
					tr.errs <- fmt.Errorf("%s: request for document %d never answered: %w", r.Name, id, err)
					return
				}
			}
		}()
	}
	return tr
}

func (tr *traffic) counts() (ok, failed int) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.ok, tr.failed
}

// waitAnswered waits until n more requests have been answered.
func (tr *traffic) waitAnswered(t *testing.T, n int, timeout time.Duration) {
	t.Helper()
	start, _ := tr.counts()
	WaitFor(t, timeout, fmt.Sprintf("%d more answered requests", n), func() (bool, string) {
		select {
		case err := <-tr.errs:
			t.Fatal(err)
		default:
		}
		ok, failed := tr.counts()
		return ok-start >= n, fmt.Sprintf("%d answered, %d attempts failed", ok-start, failed)
	})
}

// TestReplicasOneNATS: 3 mockers and 2 router replicas on one external
// nats-server. Both replicas build the same index from the stream, equal
// to what the workers cache, and prefix affinity holds through either.
func TestReplicasOneNATS(t *testing.T) {
	skipShort(t)
	n := StartNATS(t, bins.NATSServer)
	f := StartFleet(t, bins.Kvrouter, FleetConfig{NATSURL: n.URL(), Mockers: 3, Routers: 2})
	affinityAcrossReplicas(t, f, 1, 6)

	stop := make(chan struct{})
	tr := startTraffic(context.Background(), f, 100, stop)
	tr.waitAnswered(t, 40, 30*time.Second)
	close(stop)
	tr.wg.Wait()
	close(tr.errs)
	for err := range tr.errs {
		t.Fatal(err)
	}

	key := f.WaitIndexesAgree(t, 20*time.Second)
	f.WaitIndexesMatchMockers(t, 20*time.Second)
	t.Logf("both replicas hold:\n%s", key)
}

// TestReplicasNATSClusterNodeKilled: the same fleet on a 3-node JetStream
// cluster with the stream and the worker registry replicated 3 times. One
// node (the stream's leader) is killed with SIGKILL mid-traffic and later
// restarted: every request is answered (clients may retry), no KV event is
// lost, and both replicas end with equal indexes that match the workers.
//
// It found three faults, now fixed: a publisher that retried failed
// messages only when a new event woke it, a 2s reorder gap timeout shorter
// than a republish after a leader election, and routers dropping every
// worker when their registry watch went silent with its node.
// registry is the worker registry bucket's default name.
const registry = "kvrouter_workers"

// replicatedStreams connects to the cluster at url and creates the events
// stream and the worker registry bucket with 3 replicas through
// eventplane, as routers with --stream-replicas 3 create them, before any
// process starts: processes that create them at once on a fresh cluster
// can time out.
func replicatedStreams(t *testing.T, url string) (*eventplane.Conn, eventplane.Config) {
	ctx := context.Background()
	ecfg := eventplane.DefaultConfig()
	ecfg.URL = url
	ecfg.Stream.Replicas = 3
	conn, err := eventplane.Connect(ctx, ecfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	// Retried as the processes retry it: a fresh cluster can answer its
	// first API calls with timeouts while its routes settle.
	_, err = eventplane.Retry(ctx, slog.Default(), "worker registry bucket", func(ctx context.Context) (jetstream.KeyValue, error) {
		return conn.JS.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: registry, TTL: 15 * time.Second, History: 1, Replicas: 3})
	})
	if err != nil {
		t.Fatal(err)
	}
	return conn, ecfg
}

func TestReplicasNATSClusterNodeKilled(t *testing.T) {
	skipShort(t)
	c := StartNATSCluster(t, bins.NATSServer, 3)
	ctx := context.Background()

	// The processes below leave the replication factor as they find it.
	conn, ecfg := replicatedStreams(t, c.URL())

	f := StartFleet(t, bins.Kvrouter, FleetConfig{NATSURL: c.URL(), Mockers: 3, Routers: 2})
	t.Cleanup(func() {
		if t.Failed() {
			logEventFlow(t, conn, ecfg.Stream.Name, f)
		}
	})
	affinityAcrossReplicas(t, f, 1, 4)

	stop := make(chan struct{})
	tr := startTraffic(ctx, f, 100, stop)
	tr.waitAnswered(t, 20, 30*time.Second)

	// Asked until it answers, as below: a single API call can time out
	// while the cluster's routes settle.
	leader := ""
	WaitFor(t, 20*time.Second, "the leader of stream "+ecfg.Stream.Name, func() (bool, string) {
		st, err := conn.JS.Stream(ctx, ecfg.Stream.Name)
		if err != nil {
			return false, err.Error()
		}
		if cl := st.CachedInfo().Cluster; cl != nil && cl.Leader != "" {
			leader = cl.Leader
			return true, ""
		}
		return false, "no cluster leader"
	})
	var victim *NATSNode
	for _, n := range c.Nodes {
		if n.Name == leader {
			victim = n
		}
	}
	if victim == nil {
		t.Fatalf("stream leader %q is not a node of the cluster", leader)
	}
	t.Logf("killing %s (stream leader) with SIGKILL", victim.Name)
	victim.Kill()
	tr.waitAnswered(t, 20, 45*time.Second)
	victim.Restart(t, 30*time.Second)
	c.WaitMetaLeader(t, 30*time.Second)
	tr.waitAnswered(t, 10, 30*time.Second)
	close(stop)
	tr.wg.Wait()
	close(tr.errs)
	for err := range tr.errs {
		t.Fatal(err)
	}
	ok, failed := tr.counts()
	t.Logf("traffic: %d answered, %d failed attempts retried", ok, failed)

	key := f.WaitIndexesAgree(t, 30*time.Second)
	f.WaitIndexesMatchMockers(t, 30*time.Second)
	t.Logf("both replicas hold:\n%s", key)

	// Nothing scaled the replicated stream or bucket down. (The test's own
	// connection may still be moving off the killed node: ask until the
	// cluster answers.)
	for _, name := range []string{ecfg.Stream.Name, "KV_" + registry} {
		replicas := 0
		WaitFor(t, 20*time.Second, "stream info of "+name, func() (bool, string) {
			s, err := conn.JS.Stream(ctx, name)
			if err != nil {
				return false, err.Error()
			}
			replicas = s.CachedInfo().Config.Replicas
			return true, ""
		})
		if replicas != 3 {
			t.Errorf("%s has %d replicas after the run, want 3", name, replicas)
		}
	}
}

// logEventFlow logs where KV events stand: published by each mocker, held
// by the stream, and applied by each router (blocks per worker), to tell a
// lost publish from a stalled consumer.
func logEventFlow(t *testing.T, conn *eventplane.Conn, stream string, f *Fleet) {
	ctx := context.Background()
	t.Logf("%s", StreamReport(ctx, conn.JS, stream))
	for _, m := range f.Mockers {
		l, err := m.Load()
		t.Logf("mocker%d: published %d events, caches %d blocks (%v)", m.ID, l.EventsPublished, l.CachedBlocks, err)
	}
	for _, r := range f.Routers {
		d, err := r.Index(ctx)
		t.Logf("%s index (%v):\n%s", r.Name, err, d.Key())
	}
}
