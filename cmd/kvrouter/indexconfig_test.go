package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestIndexConfigPerKindKeys: router.index holds one section per index
// kind, every key loads from a file, and the flags keep their names and
// beat the file.
func TestIndexConfigPerKindKeys(t *testing.T) {
	file := writeFile(t, `
router:
  index:
    flash: {stride: 16, blocks_per_worker: 1000}
    radix: {blocks_per_worker: 2000}
    concurrent: {writers: 5, queue_size: 64}
    approx: {ttl: 30s, max_blocks: 4096, prune_fraction: 0.5}
`)
	cfg, _ := printConfig(t, "serve", "--config", file)
	ix := cfg.Frontend.Router.Index
	for _, c := range []struct {
		key       string
		got, want any
	}{
		{"flash.stride", ix.Flash.Stride, 16},
		{"flash.blocks_per_worker", ix.Flash.BlocksPerWorker, 1000},
		{"radix.blocks_per_worker", ix.Radix.BlocksPerWorker, 2000},
		{"concurrent.writers", ix.Concurrent.Writers, 5},
		{"concurrent.queue_size", ix.Concurrent.QueueSize, 64},
		{"approx.ttl", ix.Approx.TTL, 30 * time.Second},
		{"approx.max_blocks", ix.Approx.MaxBlocks, 4096},
		{"approx.prune_fraction", ix.Approx.PruneFraction, 0.5},
	} {
		if c.got != c.want {
			t.Errorf("router.index.%s = %v, want %v", c.key, c.got, c.want)
		}
	}
	cfg, _ = printConfig(t, "serve", "--config", file, "--jump-stride", "8", "--index-writers", "3", "--approx-ttl", "9s")
	ix = cfg.Frontend.Router.Index
	if ix.Flash.Stride != 8 || ix.Concurrent.Writers != 3 || ix.Approx.TTL != 9*time.Second {
		t.Errorf("flags over file: stride %d writers %d ttl %v, want 8 3 9s", ix.Flash.Stride, ix.Concurrent.Writers, ix.Approx.TTL)
	}
	if ix.Concurrent.QueueSize != 64 || ix.Approx.MaxBlocks != 4096 {
		t.Errorf("flags changed keys they do not bind: %+v", ix)
	}
}

// TestIndexConfigFlatKeysMoved: a file with the former flat router.index
// keys fails, naming each key's new place and its line.
func TestIndexConfigFlatKeysMoved(t *testing.T) {
	for _, c := range []struct{ old, val, now string }{
		{"stride", "64", "router.index.flash.stride"},
		{"blocks_per_worker", "100", "router.index.flash.blocks_per_worker and router.index.radix.blocks_per_worker"},
		{"writers", "2", "router.index.concurrent.writers"},
		{"queue_size", "8", "router.index.concurrent.queue_size"},
		{"ttl", "2m", "router.index.approx.ttl"},
		{"max_blocks", "10", "router.index.approx.max_blocks"},
		{"prune_fraction", "0.5", "router.index.approx.prune_fraction"},
	} {
		err := serveConfigErr(t, "router:\n  index:\n    "+c.old+": "+c.val+"\n")
		want := "line 3: router.index." + c.old + " is now " + c.now
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("flat key %s: err = %v, want one containing %q", c.old, err, want)
		}
	}
	// The README's former one-line form: every key named.
	err := serveConfigErr(t, "router:\n  policy: kv\n  index: {stride: 64, writers: 2, ttl: 2m0s}\n")
	for _, want := range []string{"router.index.flash.stride", "router.index.concurrent.writers", "router.index.approx.ttl"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("flow form: err = %v, want one naming %s", err, want)
		}
	}
	// An unknown key that never existed gets the plain error only.
	err = serveConfigErr(t, "router:\n  index:\n    strde: 64\n")
	if err == nil || !strings.Contains(err.Error(), "strde") || strings.Contains(err.Error(), " is now ") {
		t.Errorf("unknown key: err = %v, want one naming strde and no moved key", err)
	}
}

// serveConfigErr runs serve --print-config over a config file holding
// text and returns its error.
func serveConfigErr(t *testing.T, text string) error {
	t.Helper()
	root := newRootCmd()
	root.SetOut(&bytes.Buffer{})
	root.SetErr(&bytes.Buffer{})
	root.SetArgs([]string{"serve", "--config", writeFile(t, text), "--print-config"})
	return root.Execute()
}
