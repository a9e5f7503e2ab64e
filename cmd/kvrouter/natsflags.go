package main

import (
	"github.com/kvrouter/kvrouter/internal/eventplane"
	"github.com/spf13/pflag"
)

// bindNATSFlags binds the NATS connection flags shared by the event
// commands (bridge, events tail, bench events) to cfg.
func bindNATSFlags(fs *pflag.FlagSet, cfg *eventplane.Config) {
	fs.StringVar(&cfg.URL, "nats", "", "NATS server URL(s); empty starts an embedded server")
	fs.StringVar(&cfg.StoreDir, "nats-store", "", "embedded NATS JetStream store dir (default: a temp dir)")
	fs.IntVar(&cfg.Port, "nats-port", 0, "embedded NATS port (0 = random)")
	fs.StringVar(&cfg.User, "nats-user", "", "NATS user")
	fs.StringVar(&cfg.Password, "nats-password", "", "NATS password")
	fs.StringVar(&cfg.Token, "nats-token", "", "NATS token")
	fs.StringVar(&cfg.NKeySeedFile, "nats-nkey", "", "NATS nkey seed file")
	fs.StringVar(&cfg.CredsFile, "nats-creds", "", "NATS credentials (.creds) file")
	fs.StringVar(&cfg.TLSCert, "nats-tls-cert", "", "NATS TLS client certificate (PEM)")
	fs.StringVar(&cfg.TLSKey, "nats-tls-key", "", "NATS TLS client key (PEM)")
	fs.StringVar(&cfg.TLSCA, "nats-tls-ca", "", "NATS TLS CA bundle (PEM)")
	fs.BoolVar(&cfg.TLSInsecure, "nats-tls-insecure", false, "skip NATS server certificate verification (testing only)")
	fs.DurationVar(&cfg.Stream.MaxAge, "stream-max-age", 0, "KV events stream retention by age (default 1h)")
	fs.Int64Var(&cfg.Stream.MaxBytes, "stream-max-bytes", 0, "KV events stream retention by size (default 1 GiB)")
}
