package adversarial

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/internal/e2e"
	"github.com/kvrouter/kvrouter/internal/eventplane"
	"github.com/nats-io/nats.go/jetstream"
)

// dialNATS connects a plain client (the attacker's, or the test's eyes).
func dialNATS(t *testing.T, url string) *eventplane.Conn {
	t.Helper()
	c, err := eventplane.Connect(context.Background(), eventplane.Config{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// leaseHolders sums kvrouter_replica_lease_held over the routers.
func leaseHolders(t *testing.T, rs ...*e2e.Router) float64 {
	n := 0.0
	for _, r := range rs {
		n += max(metric(t, r, `kvrouter_replica_lease_held{replica="`+r.Name+`"}`), 0)
	}
	return n
}

// TestCraftedSnapshotAndFreshNATS: a snapshot object whose header claims
// 2^62 events (before: every starting replica panicked in makeslice) is
// skipped and counted by the replicas that start; then the NATS server
// restarts with an empty store, and a replica takes the snapshot lease
// again (before: lease=false for good, no metric).
func TestCraftedSnapshotAndFreshNATS(t *testing.T) {
	skipShort(t)
	nats := e2e.StartNATS(t, bins.NATSServer)
	c := dialNATS(t, nats.URL())
	obs, err := c.JS.CreateOrUpdateObjectStore(context.Background(), jetstream.ObjectStoreConfig{Bucket: "kvrouter_snapshots"})
	if err != nil {
		t.Fatal(err)
	}
	crafted := []byte(`{"stream_seq":1,"events":4611686018427387904}` + "\n\x91")
	if _, err := obs.PutBytes(context.Background(), fmt.Sprintf("index-%020d", uint64(1)<<62), crafted); err != nil {
		t.Fatal(err)
	}
	flags := []string{"--snapshot-interval", "500ms", "--lease-ttl", "2s"}
	r1 := e2e.StartRouter(t, bins.Kvrouter, "r1", nats.URL(), append(flags, "--replica-id", "r1")...)
	r2 := e2e.StartRouter(t, bins.Kvrouter, "r2", nats.URL(), append(flags, "--replica-id", "r2")...)
	e2e.StartMocker(t, bins.Kvrouter, 1, nats.URL(), "--speedup-ratio", "0")
	for _, r := range []*e2e.Router{r1, r2} {
		r.WaitReady(t, 60*time.Second)
		alive(t, r)
		if n := metric(t, r, `kvrouter_replica_snapshots_skipped_total{replica="`+r.Name+`"}`); n < 1 {
			t.Fatalf("%s skipped %v snapshots, want the crafted one counted", r.Name, n)
		}
	}
	complete(t, r1, "a prompt that leaves KV events behind")
	until(t, 60*time.Second, "a replica holds the lease and wrote a snapshot", func() bool {
		return leaseHolders(t, r1, r2) == 1 && metric(t, r1, `kvrouter_replica_snapshots_written_total{replica="r1"}`)+
			metric(t, r2, `kvrouter_replica_snapshots_written_total{replica="r2"}`) > 0
	})

	// NATS loses its state: killed, store wiped, restarted.
	nats.Kill()
	<-nats.Proc.Done()
	if err := os.RemoveAll(nats.StoreDir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(nats.StoreDir, 0o700); err != nil {
		t.Fatal(err)
	}
	nats.Restart(t, 30*time.Second)
	until(t, 90*time.Second, "one replica holds the lease again", func() bool {
		alive(t, r1)
		alive(t, r2)
		complete(t, r1, fmt.Sprint("after the restart ", time.Now().UnixNano()))
		return leaseHolders(t, r1, r2) == 1 && metric(t, r1, `kvrouter_replica_lease_errors_total{replica="r1"}`)+
			metric(t, r2, `kvrouter_replica_lease_errors_total{replica="r2"}`) > 0
	})
}

// TestSessionIDFlood: a 64 KiB session id is a 400 on /route and on the
// OpenAI path; 300 distinct ids at the limit are bound and the affinity
// store's gauge says so. Before: 300 ids of 1 MiB each took the router
// from 124 to 578 MB for the 5-minute TTL.
func TestSessionIDFlood(t *testing.T) {
	skipShort(t)
	ports := e2e.FreePorts(t, 1)
	m := e2e.StartMocker(t, bins.Kvrouter, 1, "", "--speedup-ratio", "0", "--no-register")
	r := &e2e.Router{Name: "serve", Port: ports[0]}
	r.Proc = e2e.Start(t, "serve", bins.Kvrouter, "serve", "--no-nats", "--addr", "127.0.0.1:"+strconv.Itoa(ports[0]),
		"--worker", "http://127.0.0.1:"+strconv.Itoa(m.Port)+",id=1", "--session-affinity", "--admin-key", admin)
	r.WaitReady(t, 60*time.Second)
	long := strings.Repeat("s", 64<<10)
	if code, body, _ := call(t, "POST", r.URL()+"/route", "", `{"prompt":"hi","session_id":"`+long+`"}`); code != 400 ||
		!strings.Contains(body, "session_id") {
		t.Fatalf("/route with a 64 KiB session id: %d %.200s", code, body)
	}
	if code, body, _ := call(t, "POST", r.URL()+"/v1/completions", "", `{"model":"kvrouter-mock","prompt":"hi","max_tokens":2}`,
		"X-Session-Id", long); code != 400 || !strings.Contains(body, "X-Session-Id") {
		t.Fatalf("completion with a 64 KiB X-Session-Id: %d %.200s", code, body)
	}
	for i := range 300 {
		id := fmt.Sprintf("%01024d", i)
		if code, body, _ := call(t, "POST", r.URL()+"/route", "", `{"prompt":"hi","session_id":"`+id+`"}`); code != 200 {
			t.Fatalf("/route with a 1 KiB session id: %d %s", code, body)
		}
	}
	alive(t, r)
	if n := metric(t, r, `kvrouter_store_entries{store="affinity"}`); n != 300 {
		t.Fatalf("affinity store holds %v sessions, want 300", n)
	}
	if b := metric(t, r, `kvrouter_store_bytes{store="affinity"}`); b <= 0 || b > metric(t, r, `kvrouter_store_limit_bytes{store="affinity"}`) {
		t.Fatalf("affinity store bytes %v beyond its limit", b)
	}
}

// TestDuplicateWorkerID: a second mocker with a live worker's id is not
// registered (it says so in its log), the registry and the router keep
// the first one's registration, and the duplicate's exit leaves it
// registered. Before: the registration flipped at every heartbeat (the
// index cleared at each flip) and the duplicate's exit deleted the real
// worker's entry.
func TestDuplicateWorkerID(t *testing.T) {
	skipShort(t)
	nats := e2e.StartNATS(t, bins.NATSServer)
	r := e2e.StartRouter(t, bins.Kvrouter, "r", nats.URL())
	a := e2e.StartMocker(t, bins.Kvrouter, 1, nats.URL(), "--speedup-ratio", "0")
	r.WaitReady(t, 60*time.Second)
	c := dialNATS(t, nats.URL())
	var kv jetstream.KeyValue
	until(t, 30*time.Second, "the registry bucket", func() bool {
		var err error
		kv, err = c.JS.KeyValue(context.Background(), "kvrouter_workers")
		return err == nil
	})
	entry := func() string {
		e, err := kv.Get(context.Background(), "w.1")
		if err != nil {
			return err.Error()
		}
		return string(e.Value())
	}
	aURL := "http://127.0.0.1:" + strconv.Itoa(a.Port)
	until(t, 30*time.Second, "worker 1 registered by a", func() bool { return strings.Contains(entry(), aURL) })
	b := e2e.StartMocker(t, bins.Kvrouter, 1, nats.URL(), "--speedup-ratio", "0")
	bURL := "http://127.0.0.1:" + strconv.Itoa(b.Port)
	until(t, 30*time.Second, "b refused (or, before, b registered)", func() bool {
		return strings.Contains(b.Proc.Log(64<<10), "registered by another live instance") || strings.Contains(entry(), bURL)
	})
	if e := entry(); !strings.Contains(e, aURL) {
		t.Fatalf("worker 1's entry is %s, want a's", e)
	}
	if err := b.Proc.Stop(); err != nil {
		t.Logf("b stopped: %v", err)
	}
	if e := entry(); !strings.Contains(e, aURL) {
		t.Fatalf("after the duplicate exited worker 1's entry is %q, want a's", e)
	}
	code, body, _ := call(t, "GET", r.URL()+"/debug/workers", "", "")
	var v struct {
		Workers []struct {
			ID  uint64 `json:"id"`
			URL string `json:"url"`
		} `json:"workers"`
	}
	if code != 200 || json.Unmarshal([]byte(body), &v) != nil || len(v.Workers) != 1 || v.Workers[0].URL != aURL {
		t.Fatalf("/debug/workers: %d %s", code, body)
	}
}
