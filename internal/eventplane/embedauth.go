package eventplane

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// ErrExposed refuses an embedded server that would listen beyond
// loopback without credentials: anyone on that network could then
// publish KV events and register workers.
var ErrExposed = errors.New("eventplane: embedded NATS on a non-loopback address needs credentials (user and password, token or nkey)")

// loopbackHost reports whether host is a loopback name or address.
func loopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (c Config) hasCredentials() bool {
	return (c.User != "" && c.Password != "") || c.Token != "" || c.NKeySeedFile != ""
}

// checkEmbeddedExposure is nil on loopback or with credentials.
func (c Config) checkEmbeddedExposure() error {
	host := c.Host
	if host == "" {
		host = "127.0.0.1"
	}
	var errs []error
	if !loopbackHost(host) && !c.hasCredentials() {
		errs = append(errs, fmt.Errorf("%w: host %q", ErrExposed, host))
	}
	if c.User != "" && c.Password == "" {
		errs = append(errs, errors.New("eventplane: embedded NATS user without a password"))
	}
	if (c.EmbeddedTLSCert == "") != (c.EmbeddedTLSKey == "") {
		errs = append(errs, errors.New("eventplane: embedded TLS certificate and key go together"))
	}
	return errors.Join(errs...)
}

// embeddedAuth sets the embedded server's required credentials and TLS
// from c (the same credentials this process's client presents).
func (c Config) embeddedAuth(o *server.Options) error {
	switch {
	case c.NKeySeedFile != "":
		// The client option derives the public key from the seed; the
		// server needs only that.
		opt, err := nats.NkeyOptionFromSeed(c.NKeySeedFile)
		if err != nil {
			return fmt.Errorf("eventplane: nkey seed %s: %w", c.NKeySeedFile, err)
		}
		var no nats.Options
		if err := opt(&no); err != nil || no.Nkey == "" {
			return fmt.Errorf("eventplane: nkey seed %s: no public key (%v)", c.NKeySeedFile, err)
		}
		o.Nkeys = []*server.NkeyUser{{Nkey: no.Nkey}}
	case c.Token != "":
		o.Authorization = c.Token
	case c.User != "":
		o.Username, o.Password = c.User, c.Password
	}
	if c.EmbeddedTLSCert != "" {
		cert, err := tls.LoadX509KeyPair(c.EmbeddedTLSCert, c.EmbeddedTLSKey)
		if err != nil {
			return fmt.Errorf("eventplane: embedded TLS: %w", err)
		}
		o.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		o.TLS = true
	}
	return nil
}
