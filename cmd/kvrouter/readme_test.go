package main

import (
	"path/filepath"
	"runtime"
	"strconv"
	"testing"

	"github.com/kvrouter/kvrouter/internal/clihelp"
	"github.com/spf13/cobra"
)

// TestREADMEFlagsAndDefaults: the flags README.md and the docs/ pages name
// for up, serve and mocker (README.md, docs/engines.md, docs/operations.md,
// docs/study-tools.md) exist, with the defaults they state ("" = any
// default); replay's and bench frontend's are checked in cmd/kvrouter-study.
func TestREADMEFlagsAndDefaults(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cmd   func() *cobra.Command
		flags map[string]string
	}{
		{"up", newUpCmd, map[string]string{"workers": "4", "port": "8080", "host": "127.0.0.1", "policy": "kv",
			"speedup-ratio": "", "api-key": "", "index": "flash", "block-size": "64", "disagg": "", "disagg-policy": "always",
			"kv-transfer-bandwidth": "2.5e+10", "kv-transfer-latency": "1ms"}},
		{"serve", newServeCmd, map[string]string{"nats": "", "tokenizer": "auto", "block-size": "64", "no-nats": "false",
			"worker": "", "forward-tokens": "true", "session-affinity": "false", "queue-threshold": "0",
			"api-key": "", "admin-key": "", "max-body-bytes": "", "max-prompt-tokens": "", "retries": "2",
			"busy-kv-usage": "0", "busy-prefill-tokens": "0", "load-poll": "250ms", "index": "flash", "jump-stride": "64",
			"index-writers": strconv.Itoa(runtime.GOMAXPROCS(0)), "embedded-nats-port": "4222", "policy": "kv",
			"model": "kvrouter-mock", "disagg-policy": "isl", "disagg-isl-threshold": "8192", "prefill-timeout": "1m0s",
			"worker-max-num-seqs": "0", "worker-max-batched-tokens": "8192", "zmq-max-message-bytes": "16777216", "zmq-hold-max-bytes": "67108864",
			"addr": "0.0.0.0:8080", "drain-timeout": "30s", "metrics-auth": "false", "zmq-bind": "", "lora-adapter": "",
			"snapshot-interval": "1m0s", "stream-max-age": "1h0m0s", "stream-max-bytes": "1073741824", "print-config": "false"}},
		{"mocker", newMockerCmd, map[string]string{"addr": "", "worker-id": "", "nats": "", "zmq-pub": "", "zmq-replay": "",
			"speedup-ratio": "", "block-size": "64", "model": "kvrouter-mock", "role": ""}},
	} {
		if err := clihelp.CheckDefaults(tc.cmd(), tc.flags); err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

// TestDocCommandsParse: every command line for this binary in a fenced
// block of README.md or a docs/ page (kvrouter up, serve, mocker, bridge,
// hash, events ..., also as go run ./cmd/kvrouter) names a real
// subcommand and parses with its flags, so the commands a user copies from
// the docs are accepted. --help and --help-all are left to the help tests.
func TestDocCommandsParse(t *testing.T) {
	if err := clihelp.CheckDocCommands(filepath.Join("..", ".."), newRootCmd, 20); err != nil {
		t.Error(err)
	}
}
