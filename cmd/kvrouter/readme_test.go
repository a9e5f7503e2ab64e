package main

import (
	"runtime"
	"strconv"
	"testing"

	"github.com/spf13/cobra"
)

// TestREADMEFlagsAndDefaults: the flags README.md names for up, serve
// and mocker exist, with the defaults it states
// ("" = any default).
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
			"worker-max-num-seqs": "0", "worker-max-batched-tokens": "8192", "zmq-max-message-bytes": "16777216", "zmq-hold-max-bytes": "67108864"}},
		{"mocker", newMockerCmd, map[string]string{"addr": "", "worker-id": "", "nats": "", "zmq-pub": "", "zmq-replay": "",
			"speedup-ratio": "", "block-size": "64", "model": "kvrouter-mock", "role": ""}},
	} {
		c := tc.cmd()
		for name, def := range tc.flags {
			f := c.Flags().Lookup(name)
			if f == nil {
				t.Errorf("%s has no --%s", tc.name, name)
				continue
			}
			if def != "" && f.DefValue != def {
				t.Errorf("%s --%s defaults to %q, README says %q", tc.name, name, f.DefValue, def)
			}
		}
	}
}
