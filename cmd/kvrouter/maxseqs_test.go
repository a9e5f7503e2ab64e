package main

import (
	"strings"
	"testing"
)

// TestWorkerMaxNumSeqsFlag: serve's --worker-max-num-seqs (flag, env,
// file) lands in the config serve runs, 0 by default, and an out-of-range
// value is refused before anything starts.
func TestWorkerMaxNumSeqsFlag(t *testing.T) {
	if cfg, text := printConfig(t, "serve"); cfg.Frontend.WorkerMaxNumSeqs != 0 || !strings.Contains(text, "worker_max_num_seqs: 0") {
		t.Fatalf("default %d:\n%s", cfg.Frontend.WorkerMaxNumSeqs, text)
	}
	if cfg, _ := printConfig(t, "serve", "--worker-max-num-seqs", "256"); cfg.Frontend.WorkerMaxNumSeqs != 256 {
		t.Errorf("flag: %d", cfg.Frontend.WorkerMaxNumSeqs)
	}
	file := writeFile(t, "worker_max_num_seqs: 64\n")
	if cfg, _ := printConfig(t, "serve", "--config", file); cfg.Frontend.WorkerMaxNumSeqs != 64 {
		t.Errorf("file: %d", cfg.Frontend.WorkerMaxNumSeqs)
	}
	t.Setenv("KVROUTER_WORKER_MAX_NUM_SEQS", "32")
	if cfg, _ := printConfig(t, "serve", "--config", file); cfg.Frontend.WorkerMaxNumSeqs != 32 {
		t.Errorf("env over file: %d", cfg.Frontend.WorkerMaxNumSeqs)
	}
	root := newRootCmd()
	root.SetOut(&strings.Builder{})
	root.SetErr(&strings.Builder{})
	root.SetArgs([]string{"serve", "--worker-max-num-seqs", "-1", "--print-config"})
	if err := root.Execute(); err == nil || !strings.Contains(err.Error(), "max_num_seqs") {
		t.Errorf("--worker-max-num-seqs -1: %v", err)
	}
}
