package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/internal/app"
	"github.com/kvrouter/kvrouter/queue"
	"github.com/kvrouter/kvrouter/router"
	"github.com/kvrouter/kvrouter/selector"
)

// printConfig runs `kvrouter <args> --print-config` and returns its YAML
// decoded into a ServeConfig (and the text).
func printConfig(t *testing.T, args ...string) (app.ServeConfig, string) {
	t.Helper()
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs(append(args, "--print-config"))
	if err := root.Execute(); err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	path := filepath.Join(t.TempDir(), "printed.yaml")
	if err := os.WriteFile(path, out.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	var cfg app.ServeConfig
	if err := app.LoadFile(path, &cfg); err != nil {
		t.Fatalf("printed config does not load: %v\n%s", err, out.String())
	}
	return cfg, out.String()
}

func writeFile(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kvrouter.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestServeConfigPrecedence: flag > KVROUTER_* environment > file >
// default, knob by knob.
func TestServeConfigPrecedence(t *testing.T) {
	file := writeFile(t, `
router:
  selector:
    busy_kv_usage: 0.5     # file only: file beats default
    overlap_credit: 2      # env overrides
    temperature: 0.3       # env and flag override
  affinity:
    ttl: 1m
model: from-file
api_keys: [file-key]
`)
	t.Setenv("KVROUTER_CONFIG", file)
	t.Setenv("KVROUTER_OVERLAP_CREDIT", "3")
	t.Setenv("KVROUTER_TEMPERATURE", "0.4")
	t.Setenv("KVROUTER_API_KEY", "env-key-1 env-key-2") // list: space-separated
	t.Setenv("KVROUTER_POLICY", "approx")
	cfg, _ := printConfig(t, "serve", "--temperature", "0.6", "--affinity-ttl", "2m")
	sc := cfg.Frontend.Router.Selector
	for _, c := range []struct {
		name      string
		got, want any
	}{
		{"busy_kv_usage (file)", sc.BusyKVUsage, 0.5},
		{"overlap_credit (env over file)", sc.OverlapCredit, 3.0},
		{"temperature (flag over env and file)", sc.Temperature, 0.6},
		{"prefill_load_scale (default)", sc.PrefillLoadScale, 1.0},
		{"affinity ttl (flag over file)", cfg.Frontend.Router.Affinity.TTL, 2 * time.Minute},
		{"model (file)", cfg.Frontend.Model, "from-file"},
		{"api keys (env over file)", strings.Join(cfg.Frontend.APIKeys, ","), "env-key-1,env-key-2"},
		{"policy (env)", cfg.Frontend.Router.Policy, router.PolicyApprox},
		{"block size (default)", cfg.Frontend.Router.BlockSize, app.DefaultBlockSize},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	// --config on the command line beats KVROUTER_CONFIG.
	other := writeFile(t, "model: other-file\n")
	cfg, _ = printConfig(t, "serve", "--config", other)
	if cfg.Frontend.Model != "other-file" || cfg.Frontend.Router.Selector.BusyKVUsage != 0 {
		t.Errorf("--config %s: model %q busy %v", other, cfg.Frontend.Model, cfg.Frontend.Router.Selector.BusyKVUsage)
	}
}

// TestConfigErrors: an unknown key is refused with its name; a bad
// environment value names its variable.
func TestConfigErrors(t *testing.T) {
	file := writeFile(t, "router:\n  selector:\n    overlap_credt: 2\n")
	root := newRootCmd()
	root.SetOut(&bytes.Buffer{})
	root.SetArgs([]string{"serve", "--config", file, "--print-config"})
	err := root.Execute()
	if err == nil || !strings.Contains(err.Error(), "overlap_credt") {
		t.Fatalf("unknown key: err = %v, want one naming overlap_credt", err)
	}
	t.Setenv("KVROUTER_QUEUE_CAPACITY", "lots")
	root = newRootCmd()
	root.SetOut(&bytes.Buffer{})
	root.SetArgs([]string{"serve", "--print-config"})
	if err := root.Execute(); err == nil || !strings.Contains(err.Error(), "KVROUTER_QUEUE_CAPACITY") {
		t.Fatalf("bad env value: err = %v", err)
	}
}

// TestPrintConfigRoundTrip: what --print-config prints, --config reads
// back to the same config (printed again: the same text), every new knob
// included.
func TestPrintConfigRoundTrip(t *testing.T) {
	args := []string{"serve", "--policy", "round-robin", "--index", "radix",
		"--active-request-weight", "0.5", "--credit-decay", "1.5", "--host-weight", "0.6",
		"--disk-weight", "0.1", "--busy-prefill-fraction", "0.9", "--approx-ttl", "90s",
		"--affinity-ttl", "7m", "--queue-capacity", "77", "--jump-stride", "32",
		"--stale-limit", "3m", "--queue-policy", "wspt", "--api-key", "k1", "--api-key", "k2",
		"--worker", "http://127.0.0.1:9001,id=4", "--nats", "nats://127.0.0.1:4333"}
	cfg, text := printConfig(t, args...)
	rc := cfg.Frontend.Router
	for _, c := range []struct {
		name      string
		got, want any
	}{
		{"policy", rc.Policy, router.PolicyRoundRobin},
		{"index", cfg.Frontend.Index, "radix"},
		{"active-request-weight", rc.Selector.ActiveRequestWeight, 0.5},
		{"credit-decay", rc.Selector.CreditDecay, 1.5},
		{"host-weight", rc.Selector.HostWeight, 0.6},
		{"disk-weight", rc.Selector.DiskWeight, 0.1},
		{"busy-prefill-fraction", rc.Selector.BusyPrefillFraction, 0.9},
		{"approx-ttl", rc.Index.Approx.TTL, 90 * time.Second},
		{"affinity-ttl", rc.Affinity.TTL, 7 * time.Minute},
		{"queue-capacity", rc.Queue.Capacity, 77},
		{"jump-stride", rc.Index.Flash.Stride, 32},
		{"stale-limit", rc.Loads.StaleAfter, 3 * time.Minute},
		{"queue-policy", rc.Queue.Policy, queue.WSPT},
		{"api-key", strings.Join(cfg.Frontend.APIKeys, ","), "k1,k2"},
		{"worker", strings.Join(cfg.Workers, " "), "http://127.0.0.1:9001,id=4"},
		{"nats", cfg.NATS.URL, "nats://127.0.0.1:4333"},
	} {
		if c.got != c.want {
			t.Errorf("--%s: %v, want %v", c.name, c.got, c.want)
		}
	}
	_, again := printConfig(t, "serve", "--config", writeFile(t, text))
	if again != text {
		t.Errorf("round trip changed the config:\nfirst:\n%s\nagain:\n%s", text, again)
	}
	// The defaults print and read back too.
	_, def := printConfig(t, "serve")
	if _, back := printConfig(t, "serve", "--config", writeFile(t, def)); back != def {
		t.Errorf("defaults do not round-trip:\n%s\n---\n%s", def, back)
	}
}

// TestMockerAndBridgeConfig: the other runtimes resolve the same way and
// share serve's defaults.
func TestMockerAndBridgeConfig(t *testing.T) {
	t.Setenv("KVROUTER_NUM_BLOCKS", "512")
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs([]string{"mocker", "--worker-id", "7", "--print-config"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	var m app.MockerConfig
	if err := app.LoadFile(writeFile(t, out.String()), &m); err != nil {
		t.Fatal(err)
	}
	if m.WorkerID != 7 || m.Mocker.Engine.NumBlocks != 512 || m.Mocker.Engine.BlockSize != app.DefaultBlockSize || m.Mocker.Model != app.DefaultModel {
		t.Errorf("mocker config %+v", m)
	}
	os.Unsetenv("KVROUTER_NUM_BLOCKS") // no flag of bridge's: refused there
	root = newRootCmd()
	out.Reset()
	root.SetOut(&out)
	root.SetArgs([]string{"bridge", "--zmq", "tcp://127.0.0.1:5557", "--worker-id", "3", "--print-config"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	var b app.BridgeConfig
	if err := app.LoadFile(writeFile(t, out.String()), &b); err != nil {
		t.Fatal(err)
	}
	if b.BlockSize != app.DefaultBlockSize || b.Model != app.DefaultModel || b.WorkerID != 3 {
		t.Errorf("bridge config %+v: want serve's block size and model", b)
	}
}

// --preset replaces the cost knobs; a flag, the environment or a file
// still overrides a single knob on top of it.
func TestServePreset(t *testing.T) {
	def, _ := printConfig(t, "serve")
	if def.Frontend.Router.Selector.Cost != selector.CostTime || def.Frontend.Router.Predict.TTL == 0 {
		t.Fatalf("default cost %v predict %v: want the time cost with predictions", def.Frontend.Router.Selector.Cost, def.Frontend.Router.Predict.TTL)
	}
	cfg, text := printConfig(t, "serve", "--preset", "dynamo", "--overlap-credit", "3")
	sc := cfg.Frontend.Router.Selector
	if sc.Cost != selector.CostBlocks || sc.PrefillLoadScale != 1 || sc.OverlapCredit != 3 || cfg.Frontend.Router.Predict.TTL != 0 {
		t.Errorf("--preset dynamo --overlap-credit 3: cost %v scale %v credit %v predict %v\n%s",
			sc.Cost, sc.PrefillLoadScale, sc.OverlapCredit, cfg.Frontend.Router.Predict.TTL, text)
	}
	if !strings.Contains(text, "cost: blocks") {
		t.Errorf("printed config lacks the cost model name:\n%s", text)
	}
	t.Setenv("KVROUTER_PRESET", "dynamo")
	if cfg, _ := printConfig(t, "serve"); cfg.Frontend.Router.Selector.Cost != selector.CostBlocks {
		t.Errorf("KVROUTER_PRESET=dynamo: cost %v", cfg.Frontend.Router.Selector.Cost)
	}
	root := newRootCmd()
	root.SetOut(&bytes.Buffer{})
	root.SetArgs([]string{"serve", "--preset", "nope", "--print-config"})
	if err := root.Execute(); err == nil {
		t.Error("unknown preset accepted")
	}
}
