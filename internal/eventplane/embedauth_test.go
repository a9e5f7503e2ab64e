package eventplane_test

import (
	"errors"
	"testing"

	"github.com/kvrouter/kvrouter/internal/eventplane"
	"github.com/kvrouter/kvrouter/internal/eventplane/eventplanetest"
	"github.com/nats-io/nats.go"
)

// TestEmbeddedExposureNeedsCredentials: an embedded server on a
// non-loopback host without credentials is refused before it listens;
// with a token or user and password it starts, requires them from every
// client, and this process's own client presents them. On loopback no
// credentials are needed (local workers join with a plain URL).
func TestEmbeddedExposureNeedsCredentials(t *testing.T) {
	for _, host := range []string{"0.0.0.0", "::", "10.1.2.3", "example.com"} {
		cfg := eventplane.DefaultConfig()
		cfg.Host = host
		if err := cfg.Validate(); !errors.Is(err, eventplane.ErrExposed) {
			t.Errorf("host %s without credentials: %v, want ErrExposed", host, err)
		}
		cfg.Token = "s3cret"
		if err := cfg.Validate(); err != nil {
			t.Errorf("host %s with a token: %v", host, err)
		}
	}
	for _, host := range []string{"127.0.0.1", "localhost", "::1", ""} {
		cfg := eventplane.DefaultConfig()
		cfg.Host = host
		if err := cfg.Validate(); err != nil {
			t.Errorf("loopback host %q: %v", host, err)
		}
	}
	for name, edit := range map[string]func(*eventplane.Config){
		"token":    func(c *eventplane.Config) { c.Token = "s3cret" },
		"password": func(c *eventplane.Config) { c.User, c.Password = "kv", "s3cret" },
	} {
		conn := eventplanetest.EmbeddedWith(t, edit)
		if conn.NC.Status() != nats.CONNECTED {
			t.Fatalf("%s: own client not connected", name)
		}
		if nc, err := nats.Connect(conn.ClientURL(), nats.MaxReconnects(0)); err == nil {
			nc.Close()
			t.Errorf("%s: a client without credentials connected", name)
		}
		var opt nats.Option = nats.Token("s3cret")
		if name == "password" {
			opt = nats.UserInfo("kv", "s3cret")
		}
		nc, err := nats.Connect(conn.ClientURL(), opt)
		if err != nil {
			t.Errorf("%s: a client with credentials: %v", name, err)
		} else {
			nc.Close()
		}
	}
}
