package app

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/kvrouter/kvrouter/internal/discovery"
	"github.com/kvrouter/kvrouter/internal/eventplane"
	"github.com/kvrouter/kvrouter/internal/eventplane/zmqguard"
	"github.com/kvrouter/kvrouter/internal/eventplane/zmqsub"
	"github.com/kvrouter/kvrouter/internal/frontend"
	"github.com/kvrouter/kvrouter/internal/mockerd"
	"github.com/kvrouter/kvrouter/internal/replica"
	"github.com/kvrouter/kvrouter/mocker"
	"github.com/kvrouter/kvrouter/router"
	"github.com/kvrouter/kvrouter/tokenizer"
)

// Defaults shared by every subcommand, so that a router, its mockers and
// its bridges agree without flags: the block size of DESIGN.md §6 (the
// mocker's and router.DefaultBlockSize) and the mocker's model name.
const (
	DefaultBlockSize = router.DefaultBlockSize
	DefaultModel     = "kvrouter-mock"
	// DefaultEmbeddedNATSPort is where serve's embedded NATS listens, so
	// that workers started by hand find it (nats://127.0.0.1:4222).
	DefaultEmbeddedNATSPort = 4222
)

// ServeConfig is the whole configuration of `kvrouter serve`: the
// frontend's (which composes the router's: policy, block size, index,
// selector, loads, queue and affinity configs), the event plane's and the
// shell's own fields. Its YAML form is what --config reads and
// --print-config prints.
type ServeConfig struct {
	// Listen is the HTTP listen address. Default "0.0.0.0:8080".
	Listen string `yaml:"listen"`
	// Tokenizer is "auto", "builtin" (compiled in), "remote" (ask the
	// workers' /tokenize) or a tokenizer.json file / model directory
	// (ResolveTokenizer). "auto" takes the model's own tokenizer.json (a
	// local model path, or the Hugging Face cache), else the workers'
	// /tokenize, else refuses to start; the mock model gets the built-in
	// one. Token ids are forwarded only with the model's own tokenizer.
	// Default "auto"; "" = auto.
	Tokenizer string `yaml:"tokenizer"`
	// TokenizerURLs are the worker base URLs asked with Tokenizer
	// "remote". Default none = the static workers.
	TokenizerURLs []string `yaml:"tokenizer_urls"`
	// Frontend is the serving path and the routing core (its fields sit
	// at the top level of the YAML form: model, index, router, ...).
	// Default frontend.DefaultConfig() with Model DefaultModel.
	Frontend frontend.Config `yaml:",inline"`
	// NATS is the event plane: the KV event stream and the worker
	// registry. URL "" starts an embedded server on NATS.Port (default
	// 4222) when there are no static workers.
	NATS eventplane.Config `yaml:"nats"`
	// NoNATS uses neither NATS nor the embedded server (static workers
	// with ZMQ events only). Default false.
	NoNATS bool `yaml:"no_nats"`
	// Replica makes this process one replica of a routing tier on NATS
	// (DESIGN.md §9): snapshots of the index with a writer lease, restore
	// and replay before ready, load and affinity sync. Used only with
	// NATS (without it there are no replicas). Model "" follows
	// Frontend.Model. Default replica.DefaultConfig(): snapshot every 1m,
	// keep 3, lease TTL 10s, sync on.
	Replica replica.Config `yaml:"replica"`
	// Workers are static workers in the --worker syntax
	// (URL[,id=N,zmq=tcp://...,replay=tcp://...,bs=N]). Default none.
	Workers []string `yaml:"workers"`
	// WorkersFile is a YAML file with more static workers. Default none.
	WorkersFile string `yaml:"workers_file"`
	// ZMQBind are endpoints (tcp://HOST:PORT) where serve binds one ZMQ
	// SUB each for engines that connect their KV event PUB to the router
	// (the bind topology: vLLM with a host endpoint, llm-d's centralized
	// mode, llm-d-inference-sim). The topic kv@<pod>@<model> names the
	// worker (its pod= option, URL host:port or host). Default none.
	ZMQBind []string `yaml:"zmq_bind"`
	// ZMQMaxMessageBytes bounds a ZMQ message (each frame and their sum)
	// on every ZMQ socket serve reads (bound, dialed, replay): a peer
	// that announces a larger one is dropped before anything is
	// allocated for it, counted in kvrouter_zmq_peers_dropped_total.
	// Default zmqguard.DefaultMaxMessageBytes (16 MiB: a vLLM batch of
	// some three million stored tokens); 0 = the default.
	ZMQMaxMessageBytes int64 `yaml:"zmq_max_message_bytes"`
	// ZMQHoldMaxBytes bounds, in bytes, the bind's held messages of pods
	// no worker has yet (also at most 1024 messages, 30 s); past it the
	// oldest are dropped. Default zmqsub.DefaultHoldMaxBytes (64 MiB);
	// 0 = the default.
	ZMQHoldMaxBytes int64 `yaml:"zmq_hold_max_bytes"`
	// LogLevel is debug, info, warn or error. Default "info".
	LogLevel string `yaml:"log_level"`
	// ResetStates starts from clean state (Dynamo's --router-reset-states):
	// with NATS, before subscribing, this model's KV events are purged from
	// the stream, its snapshots deleted and its worker registrations
	// removed (live workers register again at their next heartbeat); one
	// log line says what went. Refused while another replica holds the
	// model's snapshot lease unless ResetForce. Default false.
	ResetStates bool `yaml:"reset_states"`
	// ResetForce resets even while another replica holds the lease (it
	// keeps serving from its own index). Default false.
	ResetForce bool `yaml:"reset_states_force"`

	// Programmatic use (internal/fleet, tests); not configuration.

	// StaticWorkers are added to Workers as they are.
	StaticWorkers []discovery.Worker `yaml:"-"`
	// SharedStores are event sources that are not workers: the G4 stores
	// of a fleet (DESIGN.md §7), whose events the member gate accepts
	// without a registration (kvrouter up sets its store's id). Default
	// none.
	SharedStores []uint64 `yaml:"-"`
	// ZMQDynamic runs the ZMQ subscriber even with no static ZMQ worker
	// and no ZMQBind, for sources a discovery adds (ZMQ().Add; the
	// endpoint picker's pool). Default false.
	ZMQDynamic bool `yaml:"-"`
	// Listener, when set, is served instead of listening on Listen.
	Listener net.Listener `yaml:"-"`
	// Logger overrides LogLevel's stderr logger.
	Logger *slog.Logger `yaml:"-"`
	// TokenizerImpl, when set, is used instead of loading Tokenizer.
	TokenizerImpl tokenizer.Tokenizer `yaml:"-"`
}

// DefaultServeConfig returns serve's defaults (DESIGN.md §4 for the
// routing core: router.DefaultConfig inside frontend.DefaultConfig).
func DefaultServeConfig() ServeConfig {
	fc := frontend.DefaultConfig()
	fc.Model = DefaultModel
	fc.Router.BlockSize = DefaultBlockSize
	// One prefix chain across tiers (DESIGN.md §7): lower-tier stores under
	// a device parent are what offloading engines publish; replica
	// snapshots carry the view (router.DumpTiers).
	fc.Router.TierChains = true
	nc := eventplane.DefaultConfig()
	nc.Port = DefaultEmbeddedNATSPort
	return ServeConfig{
		Listen:    "0.0.0.0:8080",
		Tokenizer: TokenizerAuto,
		Frontend:  fc,
		NATS:      nc,
		Replica:   replica.DefaultConfig(),
		LogLevel:  "info",

		ZMQMaxMessageBytes: zmqguard.DefaultMaxMessageBytes,
		ZMQHoldMaxBytes:    zmqsub.DefaultHoldMaxBytes,
	}
}

// Validate reports every problem, joined.
func (c ServeConfig) Validate() error {
	var errs []error
	if c.Listen == "" && c.Listener == nil {
		errs = append(errs, errors.New("serve: listen address required"))
	}
	fc := c.Frontend
	if fc.Tokenizer == nil {
		fc.Tokenizer = placeholderTokenizer{} // loaded later; checked there
	}
	if err := fc.Validate(); err != nil {
		errs = append(errs, err)
	}
	if _, err := parseLevel(c.LogLevel); err != nil {
		errs = append(errs, err)
	}
	if c.NATS.Port < 0 {
		errs = append(errs, fmt.Errorf("serve: NATS port %d < 0", c.NATS.Port))
	}
	if err := c.Replica.Validate(); err != nil {
		errs = append(errs, err)
	}
	for _, ep := range c.ZMQBind {
		errs = append(errs, validBind(ep))
	}
	if c.ZMQMaxMessageBytes < 0 || c.ZMQHoldMaxBytes < 0 {
		errs = append(errs, fmt.Errorf("serve: zmq max message bytes %d and hold max bytes %d must be >= 0",
			c.ZMQMaxMessageBytes, c.ZMQHoldMaxBytes))
	}
	return errors.Join(errs...)
}

// MockerConfig is the whole configuration of `kvrouter mocker`: one
// simulated vLLM worker (mockerd.Config, which composes the engine's
// mocker.Config) and its event plane.
type MockerConfig struct {
	// Listen is the HTTP listen address. Default "127.0.0.1:8000".
	Listen string `yaml:"listen"`
	// AdvertiseURL is the URL routers use to reach this worker. Default
	// "" = http://<bound address>.
	AdvertiseURL string `yaml:"advertise_url"`
	// WorkerID is the worker id in KV events and discovery. Default 1.
	WorkerID uint64 `yaml:"worker_id"`
	// Role is the worker's part in disaggregated serving, registered with
	// it (DESIGN.md §10): prefill, decode or both. Default "" = both.
	Role string `yaml:"role"`
	// Tokenizer: "builtin" or a tokenizer.json file / model directory.
	// Default "builtin".
	Tokenizer string `yaml:"tokenizer"`
	// Mocker is the worker (model, engine, default max tokens); its fields
	// sit at the top level of the YAML form. Default mockerd.DefaultConfig()
	// (engine defaults of DESIGN.md §6, model DefaultModel).
	Mocker mockerd.Config `yaml:",inline"`
	// Tiers are the engine's lower KV tiers (DESIGN.md §7), as sim
	// --tiers: "host=4x,disk=16x[,shared=N]", capacities in multiples of
	// the engine's blocks or in blocks; they set Engine.Tiers' capacities
	// (its links and offload policy stay). A shared store here is this
	// worker's alone (kvrouter up shares one across its workers). Default
	// "" = G1 only (or whatever Engine.Tiers says).
	Tiers string `yaml:"tiers"`
	// NATS: with NATS.URL set, publish KV events to the JetStream stream
	// and register in the worker bucket. Default "" = neither.
	NATS eventplane.Config `yaml:"nats"`
	// NoRegister publishes events but does not register. Default false.
	NoRegister bool `yaml:"no_register"`
	// ZMQPub also publishes KV events vLLM-style on this ZMQ PUB endpoint
	// (e.g. tcp://127.0.0.1:5557); ZMQReplay serves replay requests.
	// Default "" = off.
	ZMQPub    string `yaml:"zmq_pub"`
	ZMQReplay string `yaml:"zmq_replay"`
	// DrainTimeout bounds graceful shutdown. Default 30 s.
	DrainTimeout time.Duration `yaml:"drain_timeout"`
	// LogLevel is debug, info, warn or error. Default "info".
	LogLevel string `yaml:"log_level"`

	// Programmatic use; not configuration.

	// ZMQDynamic runs the ZMQ subscriber even with no static ZMQ worker
	// and no ZMQBind, for sources a discovery adds (ZMQ().Add; the
	// endpoint picker's pool). Default false.
	ZMQDynamic bool `yaml:"-"`
	// Listener, when set, is served instead of listening on Listen.
	Listener net.Listener `yaml:"-"`
	// Logger overrides LogLevel's stderr logger.
	Logger *slog.Logger `yaml:"-"`
	// TokenizerImpl, when set, is used instead of loading Tokenizer.
	TokenizerImpl tokenizer.Tokenizer `yaml:"-"`
}

// DefaultMockerConfig returns the mocker's defaults.
func DefaultMockerConfig() MockerConfig {
	mc := mockerd.DefaultConfig()
	mc.Model = DefaultModel
	mc.Engine.BlockSize = DefaultBlockSize
	mc.Engine.EnablePrefixCaching = true
	return MockerConfig{
		Listen:       "127.0.0.1:8000",
		WorkerID:     1,
		Tokenizer:    "builtin",
		Mocker:       mc,
		NATS:         eventplane.Config{},
		DrainTimeout: 30 * time.Second,
		LogLevel:     "info",
	}
}

// Validate reports every problem, joined.
func (c MockerConfig) Validate() error {
	var errs []error
	if c.Listen == "" && c.Listener == nil {
		errs = append(errs, errors.New("mocker: listen address required"))
	}
	mc := c.Mocker
	if mc.Tokenizer == nil {
		mc.Tokenizer = placeholderTokenizer{}
	}
	if err := mc.Validate(); err != nil {
		errs = append(errs, err)
	}
	if _, err := mocker.ParseTierSizes(c.Tiers); err != nil {
		errs = append(errs, fmt.Errorf("mocker: %w", err))
	}
	if c.ZMQReplay != "" && c.ZMQPub == "" {
		errs = append(errs, errors.New("mocker: a ZMQ replay endpoint needs a ZMQ PUB endpoint"))
	}
	if _, err := router.ParseRole(c.Role); err != nil {
		errs = append(errs, fmt.Errorf("mocker: %w", err))
	}
	if c.DrainTimeout < 0 {
		errs = append(errs, fmt.Errorf("mocker: drain timeout %v < 0", c.DrainTimeout))
	}
	if _, err := parseLevel(c.LogLevel); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// BridgeConfig is the whole configuration of `kvrouter bridge`: one
// engine's ZMQ KV events republished into the JetStream stream.
type BridgeConfig struct {
	// ZMQ is the engine's ZMQ PUB endpoint (tcp://host:port). Required.
	ZMQ string `yaml:"zmq"`
	// Replay is the engine's ZMQ replay endpoint. Default "" = none.
	Replay string `yaml:"replay"`
	// WorkerID is the router worker id of this engine. Required (> 0).
	WorkerID uint64 `yaml:"worker_id"`
	// DPSize is the number of data-parallel ranks (rank r on port + r).
	// Default 1.
	DPSize int `yaml:"dp_size"`
	// BlockSize is the engine's KV block size in tokens; must equal the
	// router's. Default DefaultBlockSize (64), as serve and mocker.
	BlockSize int `yaml:"block_size"`
	// Model names the subject kvrouter.<model>.kv.<worker>. Default
	// DefaultModel, as serve and mocker.
	Model string `yaml:"model"`
	// Format is the stream payload: msgpack or json. Default "msgpack".
	Format string `yaml:"format"`
	// ZMQMaxMessageBytes bounds a ZMQ message read from the engine (each
	// frame and their sum), as serve's: a peer announcing more is
	// dropped before it is allocated. Default
	// zmqguard.DefaultMaxMessageBytes (16 MiB).
	ZMQMaxMessageBytes int64 `yaml:"zmq_max_message_bytes"`
	// NATS is where to publish. URL "" starts an embedded server only
	// this process can see (a warning is logged).
	NATS eventplane.Config `yaml:"nats"`
	// LogLevel is debug, info, warn or error. Default "info".
	LogLevel string `yaml:"log_level"`

	// Logger overrides LogLevel's stderr logger (programmatic use).
	Logger *slog.Logger `yaml:"-"`
}

// DefaultBridgeConfig returns the bridge's defaults.
func DefaultBridgeConfig() BridgeConfig {
	return BridgeConfig{DPSize: 1, BlockSize: DefaultBlockSize, Model: DefaultModel, Format: "msgpack", LogLevel: "info",
		ZMQMaxMessageBytes: zmqguard.DefaultMaxMessageBytes}
}

// Validate reports every problem, joined.
func (c BridgeConfig) Validate() error {
	var errs []error
	if c.ZMQ == "" {
		errs = append(errs, errors.New("bridge: a ZMQ endpoint is required"))
	}
	if c.WorkerID == 0 {
		errs = append(errs, errors.New("bridge: a worker id (> 0) is required"))
	}
	if c.BlockSize <= 0 || c.DPSize <= 0 {
		errs = append(errs, fmt.Errorf("bridge: block size %d and dp size %d must be > 0", c.BlockSize, c.DPSize))
	}
	if c.ZMQMaxMessageBytes < 0 {
		errs = append(errs, fmt.Errorf("bridge: zmq max message bytes %d < 0", c.ZMQMaxMessageBytes))
	}
	if _, err := eventplane.ParseFormat(c.Format); err != nil {
		errs = append(errs, err)
	}
	if _, err := parseLevel(c.LogLevel); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
