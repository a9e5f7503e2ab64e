package main

import (
	"bytes"
	"os"
	"testing"

	"github.com/kvrouter/kvrouter/internal/app"
	"github.com/kvrouter/kvrouter/internal/eventplane/zmqguard"
)

// TestStoreBoundFlags: the store and input bounds have flags, and the
// environment sets them too (flag > KVROUTER_* > YAML > default).
func TestStoreBoundFlags(t *testing.T) {
	def, _ := printConfig(t, "serve")
	h := def.Frontend.Hardening
	if h.TokenizeQueueBytes != 64<<20 || h.MaxStreams != 8192 || h.MaxStreamBufferBytes != 1<<30 || def.Replica.Sync.MaxPeers != 256 {
		t.Errorf("defaults: tokenize queue bytes %d, max streams %d, stream buffer bytes %d, sync max peers %d",
			h.TokenizeQueueBytes, h.MaxStreams, h.MaxStreamBufferBytes, def.Replica.Sync.MaxPeers)
	}
	t.Setenv("KVROUTER_MAX_STREAMS", "7")
	cfg, _ := printConfig(t, "serve", "--tokenize-queue-bytes", "1000", "--max-stream-buffer-bytes", "2000", "--sync-max-peers", "3")
	h = cfg.Frontend.Hardening
	if h.TokenizeQueueBytes != 1000 || h.MaxStreams != 7 || h.MaxStreamBufferBytes != 2000 || cfg.Replica.Sync.MaxPeers != 3 {
		t.Errorf("set: tokenize queue bytes %d, max streams %d, stream buffer bytes %d, sync max peers %d",
			h.TokenizeQueueBytes, h.MaxStreams, h.MaxStreamBufferBytes, cfg.Replica.Sync.MaxPeers)
	}
	os.Unsetenv("KVROUTER_MAX_STREAMS") // no flag of bridge's: refused there
	for _, tc := range []struct {
		args []string
		want int64
	}{
		{nil, zmqguard.DefaultMaxMessageBytes},
		{[]string{"--zmq-max-message-bytes", "4096"}, 4096},
	} {
		root := newRootCmd()
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetArgs(append([]string{"bridge", "--zmq", "tcp://127.0.0.1:5557", "--worker-id", "3", "--print-config"}, tc.args...))
		if err := root.Execute(); err != nil {
			t.Fatal(err)
		}
		var b app.BridgeConfig
		if err := app.LoadFile(writeFile(t, out.String()), &b); err != nil {
			t.Fatal(err)
		}
		if b.ZMQMaxMessageBytes != tc.want {
			t.Errorf("bridge %v: zmq max message bytes %d, want %d", tc.args, b.ZMQMaxMessageBytes, tc.want)
		}
	}
}
