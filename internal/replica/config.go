package replica

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/kvrouter/kvrouter/internal/eventplane/loadsync"
	"github.com/kvrouter/kvrouter/internal/snapshot"
)

// Config configures a Replica (prefix state: snapshots, lease, catch-up)
// and its LoadSync (load and affinity).
type Config struct {
	// ID names this replica: the lease holder's value, the load-sync
	// origin's prefix, logs. Default "<hostname>-<pid>".
	ID string `yaml:"id"`
	// Model filters the KV event subjects consumed, as
	// eventplane.SubscriberConfig.Model. Default "" (every model).
	Model string `yaml:"model"`
	// SnapshotInterval is how often the lease holder writes a snapshot
	// (when the stream moved since the last one). Default 1m; 0 means
	// this replica never competes for the lease nor writes snapshots (it
	// still restores them).
	SnapshotInterval time.Duration `yaml:"snapshot_interval"`
	// SnapshotKeep is how many snapshots the writer keeps. Default 3; 0
	// means the default.
	SnapshotKeep int `yaml:"snapshot_keep"`
	// SnapshotBucket is the object store of the snapshots. Default
	// "kvrouter_snapshots"; "" means the default.
	SnapshotBucket string `yaml:"snapshot_bucket"`
	// SnapshotMaxBytes is the largest snapshot object a restore reads; a
	// larger one is skipped (counted) for an older one or a replay of the
	// stream. Default snapshot.DefaultMaxBytes (1 GiB); 0 means the
	// default.
	SnapshotMaxBytes int64 `yaml:"snapshot_max_bytes"`
	// LeaseBucket is the KV bucket of the snapshot writer's lease.
	// Default "kvrouter_replicas"; "" means the default.
	LeaseBucket string `yaml:"lease_bucket"`
	// LeaseTTL: a writer that stopped renewing for this long is replaced.
	// Default 10s; 0 means the default.
	LeaseTTL time.Duration `yaml:"lease_ttl"`
	// LeaseRenew is the lease's renewal interval. Default LeaseTTL/3; 0
	// means that.
	LeaseRenew time.Duration `yaml:"lease_renew"`
	// StatusInterval is how often the stream's last sequence is read (the
	// lag in Status, and the check for a stream that restarted). Default
	// 1s; 0 means the default.
	StatusInterval time.Duration `yaml:"status_interval"`
	// GapTimeout is the subscriber's wait for a missing event id before it
	// clears that worker+rank (package ordering). Default 0: the
	// subscriber's default.
	GapTimeout time.Duration `yaml:"gap_timeout"`
	// Sync configures load and affinity sync.
	Sync SyncConfig `yaml:"sync"`
	// Logger; default slog.Default().
	Logger *slog.Logger `yaml:"-"`
}

// SyncConfig configures a LoadSync (DESIGN.md §9: ephemeral state).
type SyncConfig struct {
	// Enabled turns sync on (`--replica-sync`): bookings are published
	// and the others' applied. Default true; false: each replica sees
	// only its own traffic (the wiring then builds no LoadSync).
	Enabled bool `yaml:"enabled"`
	// Subject is the core NATS subject; default "kvrouter.load".
	Subject string `yaml:"subject"`
	// Origin is this replica's id on the wire. Default Config.ID plus a
	// random suffix, so that a restarted replica is a new origin (its
	// predecessor's bookings die with the heartbeat timeout, not with
	// its frees, which never come).
	Origin string `yaml:"origin"`
	// Heartbeat is the interval of this replica's heartbeats. Default 1s;
	// 0 means the default.
	Heartbeat time.Duration `yaml:"heartbeat"`
	// Timeout: a replica unheard for this long has its bookings dropped.
	// Default 3s; 0 means the default. Must exceed Heartbeat.
	Timeout time.Duration `yaml:"timeout"`
	// MaxBatch, MaxDelay and Queue tune the loadsync batching (0: the
	// loadsync defaults 256, 1ms, 65536).
	MaxBatch int           `yaml:"max_batch"`
	MaxDelay time.Duration `yaml:"max_delay"`
	Queue    int           `yaml:"queue"`
	// MaxPeers bounds the other replicas tracked at once (anyone who may
	// publish on Subject can claim a new origin): a message from a new
	// origin beyond it is refused (SyncStats.Rejected) until a peer
	// expires. Exported as kvrouter_store_*{store="replica_peers"}.
	// Default 256; 0 means the default.
	MaxPeers int `yaml:"max_peers"`
	// Logger; default slog.Default().
	Logger *slog.Logger `yaml:"-"`
}

// DefaultConfig returns the defaults above (DESIGN.md §9).
func DefaultConfig() Config {
	return Config{
		SnapshotInterval: time.Minute,
		SnapshotKeep:     3,
		SnapshotBucket:   "kvrouter_snapshots",
		SnapshotMaxBytes: snapshot.DefaultMaxBytes,
		LeaseBucket:      "kvrouter_replicas",
		LeaseTTL:         10 * time.Second,
		StatusInterval:   time.Second,
		Sync:             DefaultSyncConfig(),
	}
}

// DefaultSyncConfig returns the sync defaults above.
func DefaultSyncConfig() SyncConfig {
	return SyncConfig{Enabled: true, Subject: "kvrouter.load", Heartbeat: time.Second, Timeout: 3 * time.Second,
		MaxPeers: 256}
}

// Validate reports every problem of c.
func (c Config) Validate() error {
	var errs []error
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"snapshot interval", c.SnapshotInterval}, {"lease TTL", c.LeaseTTL}, {"lease renew", c.LeaseRenew},
		{"status interval", c.StatusInterval}, {"gap timeout", c.GapTimeout}} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("replica: %s %v is negative", d.name, d.v))
		}
	}
	if c.SnapshotMaxBytes < 0 {
		errs = append(errs, fmt.Errorf("replica: snapshot max bytes %d is negative", c.SnapshotMaxBytes))
	}
	if c.SnapshotKeep < 0 {
		errs = append(errs, fmt.Errorf("replica: snapshot keep %d is negative", c.SnapshotKeep))
	}
	if c.LeaseTTL > 0 && c.LeaseRenew >= c.LeaseTTL {
		errs = append(errs, fmt.Errorf("replica: lease renew %v must be below the lease TTL %v", c.LeaseRenew, c.LeaseTTL))
	}
	errs = append(errs, c.Sync.Validate())
	return errors.Join(errs...)
}

// Validate reports every problem of c.
func (c SyncConfig) Validate() error {
	var errs []error
	if c.Heartbeat < 0 || c.Timeout < 0 || c.MaxDelay < 0 {
		errs = append(errs, fmt.Errorf("replica: sync heartbeat %v, timeout %v, max delay %v: negative", c.Heartbeat, c.Timeout, c.MaxDelay))
	}
	d := DefaultSyncConfig()
	if hb, to := cmp.Or(c.Heartbeat, d.Heartbeat), cmp.Or(c.Timeout, d.Timeout); to <= hb {
		errs = append(errs, fmt.Errorf("replica: sync timeout %v must exceed the heartbeat %v", to, hb))
	}
	if len(c.Origin) > loadsync.MaxOriginBytes {
		errs = append(errs, fmt.Errorf("replica: sync origin of %d bytes > %d", len(c.Origin), loadsync.MaxOriginBytes))
	}
	if c.MaxBatch < 0 || c.Queue < 0 || c.MaxPeers < 0 {
		errs = append(errs, fmt.Errorf("replica: sync max batch %d, queue %d, max peers %d: negative", c.MaxBatch, c.Queue, c.MaxPeers))
	}
	return errors.Join(errs...)
}

func (c *Config) setDefaults() {
	d := DefaultConfig()
	if c.ID == "" {
		h, _ := os.Hostname()
		c.ID = cmp.Or(h, "replica") + "-" + strconv.Itoa(os.Getpid())
	}
	c.SnapshotKeep = cmp.Or(c.SnapshotKeep, d.SnapshotKeep)
	c.SnapshotBucket = cmp.Or(c.SnapshotBucket, d.SnapshotBucket)
	c.SnapshotMaxBytes = cmp.Or(c.SnapshotMaxBytes, d.SnapshotMaxBytes)
	c.LeaseBucket = cmp.Or(c.LeaseBucket, d.LeaseBucket)
	c.LeaseTTL = cmp.Or(c.LeaseTTL, d.LeaseTTL)
	c.LeaseRenew = cmp.Or(c.LeaseRenew, c.LeaseTTL/3)
	c.StatusInterval = cmp.Or(c.StatusInterval, d.StatusInterval)
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

func (c *SyncConfig) setDefaults(id string) {
	d := DefaultSyncConfig()
	c.Subject = cmp.Or(c.Subject, d.Subject)
	c.Heartbeat = cmp.Or(c.Heartbeat, d.Heartbeat)
	c.Timeout = cmp.Or(c.Timeout, d.Timeout)
	c.MaxPeers = cmp.Or(c.MaxPeers, d.MaxPeers)
	if c.Origin == "" {
		var b [4]byte
		_, _ = rand.Read(b[:])
		c.Origin = cmp.Or(id, "replica") + "-" + hex.EncodeToString(b[:])
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}
