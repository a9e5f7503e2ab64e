package eventplanetest

import (
	"context"
	"net"
	"testing"

	"github.com/kvrouter/kvrouter/internal/eventplane"
)

// FreePort returns a loopback TCP port that was free when asked, for a
// NATS server a test restarts on the same port (its clients reconnect).
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Server starts an embedded NATS server on 127.0.0.1:port with a fresh
// temp store, as an external server would be (Embedded on a fixed port):
// closing it and starting another on the same port is a restart with an
// empty store.
func Server(t testing.TB, port int) *eventplane.Conn {
	t.Helper()
	return EmbeddedWith(t, func(c *eventplane.Config) { c.Port = port })
}

// Dial connects a TCP client to the NATS server at url (quiet), closed at
// the end of the test.
func Dial(t testing.TB, url string) *eventplane.Conn {
	t.Helper()
	cfg := eventplane.DefaultConfig()
	cfg.URL, cfg.Logger = url, Quiet
	c, err := eventplane.Connect(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}
