package frontend

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/router"
)

// trickle is a reader that yields n bytes then EOF, like a client that
// announced a large Content-Length and sent little.
type trickle struct{ n int }

func (r *trickle) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, io.EOF
	}
	k := min(len(p), r.n)
	for i := range p[:k] {
		p[i] = '1'
	}
	r.n -= k
	return k, nil
}

// TestReadAllGrowsAsBytesArrive: a claimed 8 MiB body of which 10 bytes
// arrived holds a small buffer, not the claimed length (60 slow clients
// held 326 MB).
func TestReadAllGrowsAsBytesArrive(t *testing.T) {
	b, err := readAll(&trickle{n: 10}, 8<<20, 8<<20)
	if err != nil || len(b) != 10 {
		t.Fatalf("%d bytes, %v", len(b), err)
	}
	if cap(b) > 1<<20 {
		t.Errorf("buffer of %d bytes for a 10-byte body claiming 8 MiB", cap(b))
	}
	b, err = readAll(&trickle{n: 3 << 20}, 3<<20, 8<<20)
	if err != nil || len(b) != 3<<20 {
		t.Fatalf("honest 3 MiB body: %d bytes, %v", len(b), err)
	}
}

// serveOn runs s on a loopback listener until the test ends.
func serveOn(t *testing.T, s *Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-done })
	return ln.Addr().String()
}

// closedWithin reports whether the server ends conn (EOF, reset or a
// response) before d: the test's own bound, not a speed assertion.
func closedWithin(t *testing.T, conn net.Conn, d time.Duration) bool {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(d))
	_, err := io.ReadAll(conn)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		return false
	}
	return true
}

// TestSlowAndIdleConnectionsClosed: a body that never finishes arriving
// is cut off after BodyTimeout, an idle keep-alive connection after
// IdleTimeout (neither was bounded).
func TestSlowAndIdleConnectionsClosed(t *testing.T) {
	s := newServerWith(t, false, func(c *Config) {
		c.Hardening.BodyTimeout = 300 * time.Millisecond
		c.Hardening.IdleTimeout = 300 * time.Millisecond
	})
	addr := serveOn(t, s)
	slow, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	_, _ = io.WriteString(slow, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"prompt\":")
	if !closedWithin(t, slow, 20*time.Second) {
		t.Error("a body stalled mid-way kept its connection open")
	}
	idle, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	_, _ = io.WriteString(idle, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(idle), nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz: %v", err)
	}
	resp.Body.Close()
	if !closedWithin(t, idle, 20*time.Second) {
		t.Error("an idle keep-alive connection stayed open")
	}
	if d := DefaultConfig().Hardening; d.BodyTimeout != 30*time.Second || d.IdleTimeout != 120*time.Second {
		t.Errorf("defaults %v %v, want 30s and 120s", d.BodyTimeout, d.IdleTimeout)
	}
}

// TestBodiesInFlightBounded: with MaxBodies slow bodies being read, the
// next request is a 503 at once rather than another buffer.
func TestBodiesInFlightBounded(t *testing.T) {
	s := newServerWith(t, false, func(c *Config) {
		c.Router.Policy = router.PolicyRoundRobin
		c.Hardening.MaxBodies = 2
	})
	addr := serveOn(t, s)
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range 2 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		_, _ = io.WriteString(c, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{")
	}
	waitFor(t, "two bodies in flight", func() bool { return len(s.limits().bodies) == 2 })
	resp, err := http.Post("http://"+addr+"/v1/completions", "application/json", strings.NewReader(`{"prompt":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("third body: %d, want 503", resp.StatusCode)
	}
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Add(1)
		go func() { defer wg.Done(); c.Close() }()
	}
	wg.Wait()
	waitFor(t, "slots released", func() bool { return len(s.limits().bodies) == 0 })
}

// TestReadyzAnswers503DuringDrain: while in-flight streams finish after
// shutdown began, /readyz answers 503 (the listener used to close at once,
// so probes got connection refused) and new requests are turned away;
// after the drain the listener is closed.
func TestReadyzAnswers503DuringDrain(t *testing.T) {
	s := newServerWith(t, false, func(c *Config) { c.Router.Policy = router.PolicyRoundRobin })
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: {\"choices\":[{\"text\":\"a\"}]}\n\n")
		w.(http.Flusher).Flush()
		started <- struct{}{}
		<-release
		_, _ = io.WriteString(w, "data: [DONE]\n\n")
	}))
	defer slow.Close()
	var once sync.Once
	rel := func() { once.Do(func() { close(release) }) }
	defer rel() // before slow.Close: a failed test must not leave its handler blocked
	if err := s.AddWorker(Worker{ID: 1, URL: slow.URL}); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, ln) }()
	stream := make(chan string, 1)
	go func() {
		resp, err := http.Post(base+"/v1/completions", "application/json", strings.NewReader(`{"prompt":"x","stream":true}`))
		if err != nil {
			stream <- err.Error()
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		stream <- string(b)
	}()
	<-started
	cancel()
	waitFor(t, "draining", s.draining.Load)
	probe := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := probe.Get(base + "/readyz")
	if err != nil {
		t.Fatalf("/readyz during the drain: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 {
		t.Errorf("/readyz during the drain: %d, want 503", resp.StatusCode)
	}
	resp, err = probe.Post(base+"/v1/completions", "application/json", strings.NewReader(`{"prompt":"late"}`))
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode != 503 {
			t.Errorf("new request during the drain: %d, want 503", resp.StatusCode)
		}
	}
	rel()
	if body := <-stream; !strings.Contains(body, "[DONE]") {
		t.Errorf("in-flight stream cut: %q", body)
	}
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	if _, err := probe.Get(base + "/readyz"); err == nil {
		t.Error("listener open after the drain")
	}
}
