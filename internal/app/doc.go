// Package app is the wiring of kvrouter's long-running subcommands as
// library functions: RunServe (the router frontend), RunMocker (one
// simulated worker) and RunBridge (ZMQ KV events into JetStream). The
// binary's subcommands only bind flags to their configs (ServeConfig,
// MockerConfig, BridgeConfig) and call them; internal/fleet (kvrouter up,
// the end-to-end tests) runs the very same functions, so the tests
// exercise what the binary runs.
//
// # Configuration
//
// Each config composes its components' configs (frontend.Config holds
// router.Config, which holds the indexer, selector, loads, queue and
// affinity configs) and has one Default...() with DESIGN.md's defaults.
// Resolve applies the precedence flag > KVROUTER_* environment variable >
// YAML file (--config; unknown keys are errors) > default; EnvName gives a
// flag's variable (--busy-kv-usage: KVROUTER_BUSY_KV_USAGE); a KVROUTER_*
// variable that names no flag of the command is an error (CheckEnv), with
// the closest name. WriteYAML
// prints a config in the file's shape (--print-config), so it reads back
// to the same config. The effective config is logged once at start, one
// record with dotted keys, secrets masked (Redacted).
//
// # Lifecycle
//
// NewServe and NewMocker validate, load the tokenizer and bind the
// listener, and start nothing; Run runs every part in one errgroup until
// ctx is done, then shuts down gracefully (the frontend drains in-flight
// streams while the event side keeps applying). Serve.Ready is closed once
// the index has caught up with the event stream. Nothing here is safe to
// Run twice.
//
// # Replicas
//
// With NATS, a serve runtime is one replica of a routing tier (DESIGN.md
// §9, ServeConfig.Replica): a replica.Replica feeds the index (restore
// the newest snapshot, replay the stream, then ready; the lease holder
// writes snapshots) and a replica.LoadSync shares bookings through the
// frontend (frontend.Config.Events.OnBooking out, Server.ApplyRemote in).
// /readyz adds the replica's status (frontend.Config.Readiness) and
// GET /debug/loads shows local and remote load. Without NATS there are no
// replicas.
package app
