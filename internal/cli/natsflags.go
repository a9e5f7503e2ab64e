package cli

import (
	"encoding"

	"github.com/kvrouter/kvrouter/internal/eventplane"
	"github.com/spf13/pflag"
)

// BindNATS binds the NATS connection flags (URL, embedded server,
// credentials, TLS, stream retention) to cfg; portFlag names the embedded
// server's port flag. Every flag's default is the field's current value.
func BindNATS(fs *pflag.FlagSet, cfg *eventplane.Config, portFlag string) {
	fs.StringVar(&cfg.URL, "nats", cfg.URL, "NATS server URL(s); empty starts an embedded server")
	fs.StringVar(&cfg.StoreDir, "nats-store", cfg.StoreDir, "embedded NATS JetStream store dir (default: a temp dir)")
	fs.IntVar(&cfg.Port, portFlag, cfg.Port, "embedded NATS port (0 = any free port)")
	BindNATSAuth(fs, cfg)
	fs.DurationVar(&cfg.Stream.MaxAge, "stream-max-age", cfg.Stream.MaxAge, "KV events stream retention by age (0 = 1h)")
	fs.Int64Var(&cfg.Stream.MaxBytes, "stream-max-bytes", cfg.Stream.MaxBytes, "KV events stream retention by size (0 = 1 GiB)")
	fs.IntVar(&cfg.Stream.Replicas, "stream-replicas", cfg.Stream.Replicas, "replication factor of the stream and kvrouter's buckets on a NATS cluster (0 = 1 for new ones, keep existing)")
}

// BindNATSAuth binds the credential and TLS flags of an external
// NATS server.
func BindNATSAuth(fs *pflag.FlagSet, cfg *eventplane.Config) {
	fs.StringVar(&cfg.User, "nats-user", cfg.User, "NATS user")
	fs.StringVar(&cfg.Password, "nats-password", cfg.Password, "NATS password (secret; prefer KVROUTER_NATS_PASSWORD)")
	fs.StringVar(&cfg.Token, "nats-token", cfg.Token, "NATS token (secret; prefer KVROUTER_NATS_TOKEN)")
	fs.StringVar(&cfg.NKeySeedFile, "nats-nkey", cfg.NKeySeedFile, "NATS nkey seed file")
	fs.StringVar(&cfg.CredsFile, "nats-creds", cfg.CredsFile, "NATS credentials (.creds) file")
	fs.StringVar(&cfg.TLSCert, "nats-tls-cert", cfg.TLSCert, "NATS TLS client certificate (PEM)")
	fs.StringVar(&cfg.TLSKey, "nats-tls-key", cfg.TLSKey, "NATS TLS client key (PEM)")
	fs.StringVar(&cfg.TLSCA, "nats-tls-ca", cfg.TLSCA, "NATS TLS CA bundle (PEM)")
	fs.BoolVar(&cfg.TLSInsecure, "nats-tls-insecure", cfg.TLSInsecure, "skip NATS server certificate verification (testing only)")
}

// text is a flag over a value with a text form (router.Policy,
// queue.Policy): shown as a string in --help, unlike pflag.TextVar's.
type text interface {
	encoding.TextMarshaler
	encoding.TextUnmarshaler
}

type textFlag struct{ p text }

func (f textFlag) String() string {
	b, err := f.p.MarshalText()
	if err != nil {
		return ""
	}
	return string(b)
}

func (f textFlag) Set(s string) error { return f.p.UnmarshalText([]byte(s)) }
func (textFlag) Type() string         { return "string" }

// TextVar binds a text flag to p (its current value is the default).
func TextVar(fs *pflag.FlagSet, p text, name, usage string) { fs.Var(textFlag{p}, name, usage) }
