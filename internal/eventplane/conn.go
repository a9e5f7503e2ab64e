package eventplane

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Config says how to reach NATS. With URL empty an embedded server with
// JetStream is started in-process (StartEmbedded); otherwise Connect dials
// the external server or cluster.
type Config struct {
	// URL of an external NATS server or cluster ("nats://h1:4222,nats://h2:4222").
	// Empty (the default) starts the embedded server.
	URL string `yaml:"url"`

	// Embedded server only.
	// Host to listen on; default "127.0.0.1".
	Host string `yaml:"host"`
	// Port to listen on; 0 (default) picks a free port. A Restart keeps the
	// port actually bound.
	Port int `yaml:"port"`
	// StoreDir is the JetStream store directory. Empty (default) uses a
	// temporary directory that Close removes.
	StoreDir string `yaml:"store_dir"`
	// InProcess is kept for compatibility and has no effect: the client
	// of the embedded server is in-process by default (see LoopbackTCP).
	InProcess bool `yaml:"in_process"`
	// LoopbackTCP connects this process's own client to the embedded
	// server over TCP on Host:Port. Default false: the client is connected
	// in-process (nats.InProcessServer, no sockets or syscalls per
	// message), and reconnects in-process to the new server after a
	// Restart. Other processes always reach the server by TCP (ClientURL).
	LoopbackTCP bool `yaml:"loopback_tcp"`

	// EmbeddedTLSCert and EmbeddedTLSKey (PEM files) make the embedded
	// server require TLS. Default "": plain TCP.
	EmbeddedTLSCert string `yaml:"embedded_tls_cert"`
	EmbeddedTLSKey  string `yaml:"embedded_tls_key"`

	// Credentials and TLS of the server. All optional. For an external
	// server, what this client presents; for the embedded one, User and
	// Password, Token or the NKeySeedFile's key are also what the server
	// requires (mandatory when Host is not a loopback address).
	User         string `yaml:"user"`
	Password     string `yaml:"password"`       // secret: logged masked
	Token        string `yaml:"token"`          // secret: logged masked
	NKeySeedFile string `yaml:"nkey_seed_file"` // file holding an nkey seed
	CredsFile    string `yaml:"creds_file"`     // user JWT + seed (.creds)
	TLSCert      string `yaml:"tls_cert"`       // client certificate (PEM), with TLSKey
	TLSKey       string `yaml:"tls_key"`
	TLSCA        string `yaml:"tls_ca"`       // CA bundle (PEM) to verify the server
	TLSInsecure  bool   `yaml:"tls_insecure"` // skip server certificate verification (testing only)

	// Name is the client connection name shown by the server; default "kvrouter".
	Name string `yaml:"name"`
	// Stream configures the KV events stream.
	Stream StreamConfig `yaml:"stream"`
	// Logger; default slog.Default().
	Logger *slog.Logger `yaml:"-"`
}

// StreamConfig is the KV events stream (DESIGN.md §2, transport 1).
type StreamConfig struct {
	// Name of the stream; default "KVROUTER_EVENTS".
	Name string `yaml:"name"`
	// Prefix of the subjects kvrouter.<model>.kv.<worker_id>; default "kvrouter".
	Prefix string `yaml:"prefix"`
	// MaxAge bounds retention by age; default 1h. Negative means unlimited.
	MaxAge time.Duration `yaml:"max_age"`
	// MaxBytes bounds retention by size; default 1 GiB. Negative means unlimited.
	MaxBytes int64 `yaml:"max_bytes"`
	// MaxMsgs bounds retention by message count; default 0: unlimited.
	// With snapshots (DESIGN.md §9) retention may be short.
	MaxMsgs int64 `yaml:"max_msgs"`
	// Memory keeps the stream in memory instead of files; default false.
	Memory bool `yaml:"memory"`
	// Replicas is the replication factor, on a NATS cluster, of the stream
	// and of the KV buckets and object stores kvrouter creates beside it
	// (see Conn.Replicas). 0 (the default) creates them with 1 and keeps
	// the factor of one that exists, so a process started without the
	// setting (a worker, a bridge) never scales down what a router or an
	// operator created with 3; a positive value is applied to new and
	// existing ones alike.
	Replicas int `yaml:"replicas"`
	// Duplicates is the window in which a re-published message id is
	// dropped by the server; default 2m.
	Duplicates time.Duration `yaml:"duplicates"`
}

// DefaultConfig returns an embedded-server configuration with the defaults
// above.
func DefaultConfig() Config {
	c := Config{}
	c.setDefaults()
	return c
}

func (c *Config) setDefaults() {
	if c.Host == "" {
		c.Host = "127.0.0.1"
	}
	if c.Name == "" {
		c.Name = "kvrouter"
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	s := &c.Stream
	if s.Name == "" {
		s.Name = "KVROUTER_EVENTS"
	}
	if s.Prefix == "" {
		s.Prefix = "kvrouter"
	}
	if s.MaxAge == 0 {
		s.MaxAge = time.Hour
	}
	if s.MaxBytes == 0 {
		s.MaxBytes = 1 << 30
	}
	if s.Duplicates == 0 {
		s.Duplicates = 2 * time.Minute
	}
}

// Validate reports every problem of the configuration.
func (c Config) Validate() error {
	var errs []error
	if c.URL == "" && c.CredsFile != "" {
		errs = append(errs, errors.New("eventplane: a .creds file needs an external server (--nats URL)"))
	}
	if c.URL == "" {
		errs = append(errs, c.checkEmbeddedExposure()) // embedauth.go
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		errs = append(errs, errors.New("eventplane: TLS client certificate and key go together"))
	}
	if c.Stream.Replicas < 0 || c.Stream.Replicas > 5 {
		errs = append(errs, fmt.Errorf("eventplane: stream replicas %d out of range 0..5", c.Stream.Replicas))
	}
	if c.URL == "" && c.Stream.Replicas > 1 {
		errs = append(errs, fmt.Errorf("eventplane: stream replicas %d need a NATS cluster; the embedded server is one node", c.Stream.Replicas))
	}
	if c.Port < 0 || c.Port > 65535 {
		errs = append(errs, fmt.Errorf("eventplane: port %d out of range", c.Port))
	}
	if c.Stream.Prefix != "" && strings.ContainsAny(c.Stream.Prefix, " *>") {
		errs = append(errs, fmt.Errorf("eventplane: bad subject prefix %q", c.Stream.Prefix))
	}
	return errors.Join(errs...)
}

// Conn is a NATS connection with JetStream, plus the embedded server when
// kvrouter runs one. Safe for concurrent use.
type Conn struct {
	cfg Config
	log *slog.Logger

	mu  sync.Mutex
	srv *server.Server // nil when external
	// live is the embedded server while it accepts connections (nil while
	// restarting): what the in-process client (re)connects to.
	live   atomic.Pointer[server.Server]
	tmpDir string // removed on Close
	port   int

	NC *nats.Conn
	JS jetstream.JetStream
}

// Connect connects to cfg.URL, or starts the embedded server when it is
// empty, and makes sure the events stream exists.
func Connect(ctx context.Context, cfg Config) (*Conn, error) {
	if cfg.URL == "" {
		return StartEmbedded(ctx, cfg)
	}
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Conn{cfg: cfg, log: cfg.Logger}
	opts, err := cfg.clientOptions()
	if err != nil {
		return nil, err
	}
	nc, err := nats.Connect(cfg.URL, opts...)
	if err != nil {
		return nil, fmt.Errorf("eventplane: connect %s: %w", cfg.URL, err)
	}
	if err := c.attach(ctx, nc); err != nil {
		nc.Close()
		return nil, err
	}
	return c, nil
}

// StartEmbedded starts an in-process NATS server with JetStream on
// cfg.Host:cfg.Port (a free port when 0), connects to it and creates the
// events stream.
func StartEmbedded(ctx context.Context, cfg Config) (*Conn, error) {
	cfg.URL = ""
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Conn{cfg: cfg, log: cfg.Logger, port: cfg.Port}
	if cfg.StoreDir == "" {
		d, err := os.MkdirTemp("", "kvrouter-nats-")
		if err != nil {
			return nil, fmt.Errorf("eventplane: store dir: %w", err)
		}
		c.tmpDir = d
		c.cfg.StoreDir = d
	}
	if err := c.startServer(); err != nil {
		c.cleanup()
		return nil, err
	}
	var opts []nats.Option
	if !cfg.LoopbackTCP {
		opts = append(opts, nats.InProcessServer(inProcess{c}))
	}
	base, _ := cfg.clientOptions()
	nc, err := nats.Connect(c.srv.ClientURL(), append(base, opts...)...)
	if err != nil {
		c.srv.Shutdown()
		c.cleanup()
		return nil, fmt.Errorf("eventplane: connect embedded: %w", err)
	}
	if err := c.attach(ctx, nc); err != nil {
		nc.Close()
		c.srv.Shutdown()
		c.cleanup()
		return nil, err
	}
	c.log.Info("embedded NATS started", "url", c.srv.ClientURL(), "store_dir", c.cfg.StoreDir)
	return c, nil
}

func (c *Conn) startServer() error {
	port := c.port
	if port == 0 {
		port = -1 // random
	}
	opts := &server.Options{
		ServerName: "kvrouter-embedded",
		Host:       c.cfg.Host,
		Port:       port,
		JetStream:  true,
		StoreDir:   c.cfg.StoreDir,
		NoSigs:     true,
		NoLog:      true,
	}
	if err := c.cfg.embeddedAuth(opts); err != nil { // embedauth.go
		return err
	}
	s, err := server.NewServer(opts)
	if err != nil {
		return fmt.Errorf("eventplane: embedded server: %w", err)
	}
	s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		s.Shutdown()
		return errors.New("eventplane: embedded server not ready after 10s")
	}
	c.srv = s
	c.live.Store(s)
	if addr, ok := s.Addr().(interface{ String() string }); ok {
		if i := strings.LastIndexByte(addr.String(), ':'); i >= 0 {
			if p, err := strconv.Atoi(addr.String()[i+1:]); err == nil {
				c.port = p
			}
		}
	}
	return nil
}

// inProcess connects the client to whichever embedded server is live, so
// the in-process connection survives a Restart like a TCP one: while the
// server is down it fails, and the client retries after ReconnectWait.
type inProcess struct{ c *Conn }

func (p inProcess) InProcessConn() (net.Conn, error) {
	s := p.c.live.Load()
	if s == nil {
		return nil, errors.New("eventplane: embedded server not running")
	}
	return s.InProcessConn()
}

func (c *Conn) attach(ctx context.Context, nc *nats.Conn) error {
	js, err := jetstream.New(nc,
		jetstream.WithPublishAsyncMaxPending(4096),
		jetstream.WithPublishAsyncTimeout(5*time.Second))
	if err != nil {
		return fmt.Errorf("eventplane: jetstream: %w", err)
	}
	c.NC, c.JS = nc, js
	_, err = Retry(ctx, c.log, "KV events stream", func(ctx context.Context) (struct{}, error) {
		_, err := c.EnsureStream(ctx)
		return struct{}{}, err
	})
	return err
}

// Retry calls fn until it succeeds, fails for good (not transient), ctx
// ends, or streamPatience has passed, with a growing pause between tries,
// and returns its last result. what names the thing for the log.
//
// NB: a cluster electing a leader (a node just died or restarted)
// answers JetStream API calls with timeouts or 503s for seconds; a
// process starting then waits for it instead of exiting (seen in the
// 3-node cluster tests of internal/e2e, for the stream and the buckets).
func Retry[T any](ctx context.Context, log *slog.Logger, what string, fn func(context.Context) (T, error)) (T, error) {
	deadline := time.Now().Add(streamPatience)
	backoff := 100 * time.Millisecond
	for {
		v, err := fn(ctx)
		if err == nil {
			return v, nil
		}
		if !transient(err) || ctx.Err() != nil || time.Now().After(deadline) {
			return v, err
		}
		log.Warn(what+" not reachable yet; retrying", "err", err)
		select {
		case <-ctx.Done():
			return v, err
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

// streamPatience bounds how long Retry retries a transient failure (to
// create or update the events stream or a bucket).
const streamPatience = 30 * time.Second

// transient reports whether a JetStream API error may go away by itself
// (no leader yet, a node restarting): a timeout, no responders, or a 503.
func transient(err error) bool {
	var apiErr *jetstream.APIError
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout),
		errors.Is(err, nats.ErrNoResponders), errors.Is(err, jetstream.ErrJetStreamNotEnabled):
		return true
	case errors.As(err, &apiErr):
		return apiErr.Code == 503
	}
	return false
}

// Replicas returns the replication factor to create or update the
// JetStream stream named stream with: Stream.Replicas when set, else the
// factor the stream already has, else 1. A KV bucket B is the stream
// "KV_B" and an object store B the stream "OBJ_B".
func (c *Conn) Replicas(ctx context.Context, stream string) (int, error) {
	if r := c.cfg.Stream.Replicas; r > 0 {
		return r, nil
	}
	st, err := c.JS.Stream(ctx, stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return 1, nil
	}
	if err != nil {
		return 0, fmt.Errorf("eventplane: stream %s: %w", stream, err)
	}
	return max(st.CachedInfo().Config.Replicas, 1), nil
}

// EnsureStream creates or updates the KV events stream.
func (c *Conn) EnsureStream(ctx context.Context) (jetstream.Stream, error) {
	s := c.cfg.Stream
	replicas, err := c.Replicas(ctx, s.Name)
	if err != nil {
		return nil, err
	}
	sc := jetstream.StreamConfig{
		Name:       s.Name,
		Subjects:   []string{s.Prefix + ".*.kv.*"},
		MaxAge:     max(s.MaxAge, 0),
		MaxBytes:   s.MaxBytes,
		Storage:    jetstream.FileStorage,
		Replicas:   replicas,
		Duplicates: s.Duplicates,
		Discard:    jetstream.DiscardOld,
	}
	if s.Memory {
		sc.Storage = jetstream.MemoryStorage
	}
	if s.MaxBytes < 0 {
		sc.MaxBytes = -1
	}
	sc.MaxMsgs = -1
	if s.MaxMsgs > 0 {
		sc.MaxMsgs = s.MaxMsgs
	}
	st, err := c.JS.CreateOrUpdateStream(ctx, sc)
	if err != nil {
		return nil, fmt.Errorf("eventplane: stream %s: %w", s.Name, err)
	}
	return st, nil
}

// Config returns the effective configuration (defaults filled in).
func (c *Conn) Config() Config { return c.cfg }

// Stream returns the effective stream configuration.
func (c *Conn) Stream() StreamConfig { return c.cfg.Stream }

// Embedded reports whether this Conn runs its own server.
func (c *Conn) Embedded() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.srv != nil
}

// ClientURL is the URL other processes use to reach this NATS (the
// embedded server's URL, or cfg.URL).
func (c *Conn) ClientURL() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.srv != nil {
		return c.srv.ClientURL()
	}
	return c.cfg.URL
}

// Subject is the stream subject of one worker's events.
func (c *Conn) Subject(model string, worker uint64) string {
	return Subject(c.cfg.Stream.Prefix, model, worker)
}

// EventFilter is the subject filter of model's KV events, or of every
// model's for "".
func (c *Conn) EventFilter(model string) string {
	if model == "" {
		return c.cfg.Stream.Prefix + ".*.kv.*"
	}
	return c.cfg.Stream.Prefix + "." + SubjectToken(model) + ".kv.*"
}

// Subject builds prefix.<model>.kv.<worker_id>. Dots, spaces and wildcards in
// the model name become '_' so one model is one token.
func Subject(prefix, model string, worker uint64) string {
	return prefix + "." + SubjectToken(model) + ".kv." + strconv.FormatUint(worker, 10)
}

// SubjectToken makes s usable as one subject token ("" becomes "default").
func SubjectToken(s string) string {
	if s == "" {
		return "default"
	}
	return strings.Map(func(r rune) rune {
		switch r {
		case '.', ' ', '*', '>', '\t', '\n', '\r':
			return '_'
		}
		return r
	}, s)
}

// Restart shuts the embedded server down and starts it again on the same
// port and store directory; TCP clients reconnect on their own. It is for
// tests and operators' drills; an error for an external server.
func (c *Conn) Restart(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.srv == nil {
		return errors.New("eventplane: restart: not an embedded server")
	}
	c.live.Store(nil)
	c.srv.Shutdown()
	c.srv.WaitForShutdown()
	var err error
	for i := 0; i < 50; i++ { // the port may take a moment to free
		if err = c.startServer(); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return err
}

// Close closes the connection, stops the embedded server and removes a
// temporary store directory.
func (c *Conn) Close() {
	if c.NC != nil {
		_ = c.NC.Drain()
		c.NC.Close()
	}
	c.mu.Lock()
	srv := c.srv
	c.srv = nil
	c.live.Store(nil)
	c.mu.Unlock()
	if srv != nil {
		srv.Shutdown()
		srv.WaitForShutdown()
	}
	c.cleanup()
}

func (c *Conn) cleanup() {
	if c.tmpDir != "" {
		_ = os.RemoveAll(c.tmpDir)
		c.tmpDir = ""
	}
}

func (c Config) clientOptions() ([]nats.Option, error) {
	opts := []nats.Option{
		nats.Name(c.Name),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(50 * time.Millisecond),
		nats.ReconnectBufSize(64 << 20),
	}
	if c.User != "" {
		opts = append(opts, nats.UserInfo(c.User, c.Password))
	}
	if c.Token != "" {
		opts = append(opts, nats.Token(c.Token))
	}
	if c.CredsFile != "" {
		opts = append(opts, nats.UserCredentials(c.CredsFile))
	}
	if c.NKeySeedFile != "" {
		o, err := nats.NkeyOptionFromSeed(c.NKeySeedFile)
		if err != nil {
			return nil, fmt.Errorf("eventplane: nkey seed %s: %w", c.NKeySeedFile, err)
		}
		opts = append(opts, o)
	}
	if c.TLSCert != "" || c.TLSCA != "" || c.TLSInsecure {
		tc := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: c.TLSInsecure} //nolint:gosec // opt-in
		if c.TLSCert != "" {
			cert, err := tls.LoadX509KeyPair(c.TLSCert, c.TLSKey)
			if err != nil {
				return nil, fmt.Errorf("eventplane: TLS client cert: %w", err)
			}
			tc.Certificates = []tls.Certificate{cert}
		}
		if c.TLSCA != "" {
			pem, err := os.ReadFile(c.TLSCA)
			if err != nil {
				return nil, fmt.Errorf("eventplane: TLS CA: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("eventplane: TLS CA %s: no certificates", c.TLSCA)
			}
			tc.RootCAs = pool
		}
		opts = append(opts, nats.Secure(tc))
	}
	return opts, nil
}
