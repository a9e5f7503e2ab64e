package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/internal/fleet"
	"github.com/kvrouter/kvrouter/mocker"
	"github.com/kvrouter/kvrouter/router"
	"github.com/kvrouter/kvrouter/selector"
)

// TestServePeerHintConfig: the peer-KV hint's lead is a flag, its link
// YAML's peer_hints.link (the onboarding links' keys), both printed;
// a file's link is kept and the flag overrides the file's lead.
func TestServePeerHintConfig(t *testing.T) {
	cfg, text := printConfig(t, "serve")
	if got := cfg.Frontend.Router.PeerHints; got != router.DefaultPeerHintConfig() {
		t.Fatalf("defaults: %+v\n%s", got, text)
	}
	for _, key := range []string{"peer_hints:", "min_blocks: 4", "ms_per_token:", "ms_per_batch: 1"} {
		if !strings.Contains(text, key) {
			t.Fatalf("printed config lacks %q:\n%s", key, text)
		}
	}
	file := writeFile(t, "router:\n  peer_hints:\n    min_blocks: 2\n    link: {ms_per_token: 0.01, ms_per_batch: 3}\n")
	cfg, text = printConfig(t, "serve", "--config", file, "--peer-hint-min-blocks", "9")
	if got := cfg.Frontend.Router.PeerHints; got.MinBlocks != 9 || got.Link != (selector.LinkCost{MsPerToken: 0.01, MsPerBatch: 3}) {
		t.Fatalf("file and flag: %+v\n%s", got, text)
	}
}

// TestUpPeerHintLink: up prices hints over the link its mockers pull over
// (--kv-transfer-bandwidth, --kv-transfer-latency), and takes the lead.
func TestUpPeerHintLink(t *testing.T) {
	stop := errors.New("stop before starting")
	var got []router.PeerHintConfig
	newFleet = func(fc fleet.Config) (*fleet.Fleet, error) {
		got = append(got, fc.Frontend.Router.PeerHints)
		return nil, stop
	}
	defer func() { newFleet = fleet.New }()
	for _, args := range [][]string{nil, {"--kv-transfer-bandwidth", "5e9", "--kv-transfer-latency", "2ms", "--peer-hint-min-blocks", "8"}} {
		c := newUpCmd()
		c.SetArgs(args)
		c.SetOut(&bytes.Buffer{})
		c.SetErr(&bytes.Buffer{})
		if err := c.ExecuteContext(context.Background()); !errors.Is(err, stop) {
			t.Fatalf("%v: %v", args, err)
		}
	}
	slow := selector.TransferLink(mocker.DefaultBytesPerToken, 5e9, 2*time.Millisecond)
	if len(got) != 2 || got[0] != router.DefaultPeerHintConfig() || got[1].Link != slow || got[1].MinBlocks != 8 {
		t.Fatalf("up's peer hint configs %+v, want the default then %+v with 8 blocks", got, slow)
	}
}
