package adversarial

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/kvrouter/kvrouter/internal/e2e"
)

// TestEmbeddedNATSExposureRefused: serve asked to run its embedded NATS
// beyond loopback without credentials refuses to start (it checks before
// listening, so nothing is exposed even for a moment).
func TestEmbeddedNATSExposureRefused(t *testing.T) {
	skipShort(t)
	port := e2e.FreePorts(t, 1)[0]
	p := e2e.Start(t, "serve", bins.Kvrouter, "serve", "--addr", "127.0.0.1:"+strconv.Itoa(port),
		"--embedded-nats-host", "0.0.0.0", "--embedded-nats-port", "0")
	select {
	case <-p.Done():
	case <-time.After(60 * time.Second):
		t.Fatal("serve with an exposed, unauthenticated embedded NATS kept running")
	}
	if p.ExitErr() == nil || !strings.Contains(p.Log(8<<10), "credentials") {
		t.Errorf("exit %v, log:\n%s", p.ExitErr(), p.Log(8<<10))
	}
}

// TestStoreDirRemovedAndReadyzDuringDrain: serve with its embedded NATS,
// stopped by SIGTERM while a stream is in flight, answers /readyz 503
// during the drain, finishes the stream, and leaves no JetStream store
// directory behind.
func TestStoreDirRemovedAndReadyzDuringDrain(t *testing.T) {
	skipShort(t)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	ports := e2e.FreePorts(t, 3)
	r := &e2e.Router{Name: "serve", Port: ports[0]}
	r.Proc = e2e.Start(t, "serve", bins.Kvrouter, "serve", "--addr", "127.0.0.1:"+strconv.Itoa(ports[0]),
		"--embedded-nats-port", strconv.Itoa(ports[1]), "--drain-timeout", "60s")
	until(t, 60*time.Second, "serve listening", func() bool {
		code, _, _ := call(t, "GET", r.URL()+"/healthz", "", "")
		return code == 200
	})
	m := e2e.StartMocker(t, bins.Kvrouter, 1, "nats://127.0.0.1:"+strconv.Itoa(ports[1]), "--speedup-ratio", "1")
	r.WaitReady(t, 60*time.Second)
	stores, _ := filepath.Glob(filepath.Join(tmp, "kvrouter-nats-*"))
	if len(stores) != 1 {
		t.Fatalf("store dirs %v, want serve's one", stores)
	}
	started := make(chan struct{})
	streamed := make(chan error, 1)
	go func() {
		resp, err := client.Post(r.URL()+"/v1/completions", "application/json",
			strings.NewReader(`{"model":"kvrouter-mock","stream":true,"max_tokens":400,"prompt":"drain me"}`))
		if err != nil {
			close(started)
			streamed <- err
			return
		}
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		first, done := true, false
		for sc.Scan() {
			if first && strings.HasPrefix(sc.Text(), "data: ") {
				close(started)
				first = false
			}
			done = done || sc.Text() == "data: [DONE]"
		}
		if first {
			close(started)
		}
		if !done {
			err = fmt.Errorf("stream cut (status %d, %v)", resp.StatusCode, sc.Err())
		}
		streamed <- err
	}()
	<-started
	go func() { _ = r.Proc.Stop() }()
	saw503 := false
	until(t, 60*time.Second, "/readyz 503 during the drain, or the stream done", func() bool {
		code, _, _ := call(t, "GET", r.URL()+"/readyz", "", "")
		saw503 = saw503 || code == 503
		return saw503 || r.Proc.Exited()
	})
	if err := <-streamed; err != nil {
		t.Errorf("in-flight stream: %v", err)
	}
	<-r.Proc.Done()
	if !saw503 {
		t.Error("/readyz never answered 503 during the drain")
	}
	m.Proc.Kill()
	if left, _ := filepath.Glob(filepath.Join(tmp, "kvrouter-nats-*")); len(left) != 0 {
		t.Errorf("store dirs left after SIGTERM: %v", left)
	}
	if _, err := os.Stat(tmp); err != nil {
		t.Fatal(err)
	}
}

// TestZMQGarbage: a static worker's ZMQ endpoint sending junk frames
// (wrong counts, random payloads, huge ones) neither stops the router nor
// its serving.
func TestZMQGarbage(t *testing.T) {
	skipShort(t)
	ports := e2e.FreePorts(t, 3)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pub := zmq4.NewPub(ctx)
	defer pub.Close()
	ep := "tcp://127.0.0.1:" + strconv.Itoa(ports[2])
	if err := pub.Listen(ep); err != nil {
		t.Fatal(err)
	}
	m := e2e.StartMocker(t, bins.Kvrouter, 1, "", "--speedup-ratio", "0", "--no-register")
	_ = m
	r := &e2e.Router{Name: "serve", Port: ports[0]}
	r.Proc = e2e.Start(t, "serve", bins.Kvrouter, "serve", "--no-nats", "--addr", "127.0.0.1:"+strconv.Itoa(ports[0]),
		"--worker", "http://127.0.0.1:"+strconv.Itoa(m.Port)+",id=1,zmq="+ep)
	r.WaitReady(t, 60*time.Second)
	frames := [][][]byte{
		{[]byte("x")},
		{[]byte(""), []byte("")},
		{[]byte("kv"), []byte{1, 2}, []byte("\xc1\xc1\xc1")},
		{[]byte("kv"), make([]byte, 8), []byte("\x93\xcb\x00\x00\x00\x00\x00\x00\x00\x00\x91\x91\xa3Bad\x00")},
		{[]byte("kv"), make([]byte, 8), make([]byte, 2<<20)},
		{[]byte("a"), []byte("b"), []byte("c"), []byte("d"), []byte("e")},
	}
	for i := range 300 {
		_ = pub.Send(zmq4.NewMsgFrom(frames[i%len(frames)]...))
	}
	until(t, 20*time.Second, "the router serving after junk on ZMQ", func() bool {
		alive(t, r)
		code, _, _ := call(t, "POST", r.URL()+"/v1/completions", "", `{"model":"kvrouter-mock","prompt":"still here","max_tokens":2}`)
		return code == 200
	})
}
