package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// NATSNode is one real nats-server process with JetStream, listening on
// loopback only, its store in the test's temp dir.
type NATSNode struct {
	Name                                 string // server name: n1, n2, ...
	ClientPort, ClusterPort, MonitorPort int    // ClusterPort 0 for a single server
	StoreDir                             string
	Proc                                 *Proc // the current process (replaced by Restart)
}

// URL is the node's client URL.
func (n *NATSNode) URL() string { return "nats://127.0.0.1:" + strconv.Itoa(n.ClientPort) }

// Kill kills the node with SIGKILL (no clean shutdown, no lame-duck mode).
func (n *NATSNode) Kill() { n.Proc.Kill() }

// Restart starts the node again with the same ports and store dir (it must
// have been killed or stopped) and waits until it is healthy.
func (n *NATSNode) Restart(t testing.TB, timeout time.Duration) {
	t.Helper()
	n.Proc = n.Proc.Restart(t)
	n.WaitHealthy(t, timeout)
}

// Healthy asks the monitoring endpoint's /healthz, which answers 200 once
// the server accepts clients and its JetStream is current with the meta
// leader and its streams.
func (n *NATSNode) Healthy() (bool, string) {
	if n.Proc.Exited() {
		return false, n.Proc.ExitReport()
	}
	status, body, err := httpGet("http://127.0.0.1:" + strconv.Itoa(n.MonitorPort) + "/healthz")
	if err != nil {
		return false, err.Error()
	}
	return status == http.StatusOK, fmt.Sprintf("%s /healthz %d %s", n.Name, status, strings.TrimSpace(body))
}

// WaitHealthy waits for Healthy.
func (n *NATSNode) WaitHealthy(t testing.TB, timeout time.Duration) {
	t.Helper()
	WaitFor(t, timeout, n.Name+" healthy", n.Healthy)
}

// MetaLeader is the JetStream meta leader this node knows ("" if none),
// from the monitoring endpoint's /jsz.
func (n *NATSNode) MetaLeader() (string, error) {
	status, body, err := httpGet("http://127.0.0.1:" + strconv.Itoa(n.MonitorPort) + "/jsz")
	if err != nil {
		return "", err
	}
	if status != http.StatusOK {
		return "", fmt.Errorf("%s /jsz: %d", n.Name, status)
	}
	var jsz struct {
		Meta *struct {
			Leader string `json:"leader"`
		} `json:"meta_cluster"`
	}
	if err := json.Unmarshal([]byte(body), &jsz); err != nil {
		return "", fmt.Errorf("%s /jsz: %w", n.Name, err)
	}
	if jsz.Meta == nil {
		return "", nil
	}
	return jsz.Meta.Leader, nil
}

// StartNATS starts one JetStream server (not clustered) and waits until it
// is healthy.
func StartNATS(t testing.TB, bin string) *NATSNode {
	t.Helper()
	ports := FreePorts(t, 2)
	n := &NATSNode{Name: "nats", ClientPort: ports[0], MonitorPort: ports[1], StoreDir: t.TempDir()}
	n.Proc = Start(t, n.Name, bin, n.args(nil, "")...)
	n.WaitHealthy(t, 20*time.Second)
	return n
}

func (n *NATSNode) args(routes []string, cluster string) []string {
	a := []string{"-n", n.Name, "-a", "127.0.0.1", "-p", strconv.Itoa(n.ClientPort),
		"-m", strconv.Itoa(n.MonitorPort), "-js", "-sd", n.StoreDir}
	if cluster != "" {
		a = append(a, "--cluster_name", cluster,
			"--cluster", "nats://127.0.0.1:"+strconv.Itoa(n.ClusterPort),
			"--routes", strings.Join(routes, ","))
	}
	return a
}

// NATSCluster is a JetStream cluster of real nats-server processes on
// loopback: every node routes to every other, each has its own store dir.
type NATSCluster struct {
	Name  string
	Nodes []*NATSNode
}

// StartNATSCluster starts size nodes named n1..n<size> and waits until
// every node is healthy and all agree on a meta leader.
func StartNATSCluster(t testing.TB, bin string, size int) *NATSCluster {
	t.Helper()
	ports := FreePorts(t, 3*size)
	c := &NATSCluster{Name: "kvrouter-e2e"}
	var routes []string
	for i := range size {
		n := &NATSNode{Name: "n" + strconv.Itoa(i+1), ClientPort: ports[3*i], ClusterPort: ports[3*i+1],
			MonitorPort: ports[3*i+2], StoreDir: t.TempDir()}
		c.Nodes = append(c.Nodes, n)
		routes = append(routes, "nats://127.0.0.1:"+strconv.Itoa(n.ClusterPort))
	}
	for _, n := range c.Nodes {
		n.Proc = Start(t, n.Name, bin, n.args(routes, c.Name)...)
	}
	c.WaitMetaLeader(t, 30*time.Second)
	return c
}

// URL lists every node's client URL, as clients are given a cluster.
func (c *NATSCluster) URL() string {
	urls := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		urls[i] = n.URL()
	}
	return strings.Join(urls, ",")
}

// WaitMetaLeader waits until every running node is healthy and all of them
// name the same meta leader.
func (c *NATSCluster) WaitMetaLeader(t testing.TB, timeout time.Duration) {
	t.Helper()
	WaitFor(t, timeout, "a JetStream meta leader", func() (bool, string) {
		leader := ""
		for _, n := range c.Nodes {
			if n.Proc.Exited() {
				continue
			}
			if ok, why := n.Healthy(); !ok {
				return false, why
			}
			l, err := n.MetaLeader()
			if err != nil {
				return false, err.Error()
			}
			if l == "" || (leader != "" && l != leader) {
				return false, fmt.Sprintf("%s sees leader %q, others %q", n.Name, l, leader)
			}
			leader = l
		}
		return leader != "", "no running node"
	})
}

// httpGet does a GET with a short timeout and returns the status and body.
func httpGet(url string) (int, string, error) {
	resp, err := httpClient.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	return resp.StatusCode, string(b), err
}

// httpClient has a timeout so that a hung server fails a poll instead of
// the test.
var httpClient = &http.Client{Timeout: 10 * time.Second}
