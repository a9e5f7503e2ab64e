package main

import (
	"bytes"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/kvrouter/kvrouter/internal/app"
	"github.com/kvrouter/kvrouter/internal/epp"
	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"
)

// TestEPPHelp: `kvrouter-epp --help-all` documents every flag, with a
// usage line.
func TestEPPHelp(t *testing.T) {
	c := newEPPCmd()
	var out bytes.Buffer
	c.SetOut(&out)
	c.SetArgs([]string{"--help-all"})
	if err := c.Execute(); err != nil {
		t.Fatal(err)
	}
	help := out.String()
	n := 0
	c.Flags().VisitAll(func(f *pflag.Flag) {
		n++
		if f.Name == "help" || f.Name == "help-all" {
			return
		}
		if f.Usage == "" || !strings.Contains(help, "--"+f.Name) {
			t.Errorf("--%s is not documented in --help-all", f.Name)
		}
	})
	for _, name := range []string{"grpc-addr", "worker", "zmq-bind", "zmq-max-message-bytes", "zmq-hold-max-bytes", "nats", "pool-selector", "pool-target-port", "body-mode"} {
		if c.Flags().Lookup(name) == nil {
			t.Errorf("epp has no --%s", name)
		}
	}
	if n < 50 {
		t.Fatalf("only %d flags: serve's are missing", n)
	}
}

// TestEPPManifestArgs: the picker's arguments in deploy/kubernetes parse
// as kvrouter-epp flags and give a valid configuration, the pod's
// environment (KVROUTER_POOL_NAMESPACE) included.
func TestEPPManifestArgs(t *testing.T) {
	raw, err := os.ReadFile("../../deploy/kubernetes/epp.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var command, args []string
	d := yaml.NewDecoder(bytes.NewReader(raw))
	for {
		var doc struct {
			Kind string `yaml:"kind"`
			Spec struct {
				Template struct {
					Spec struct {
						Containers []struct {
							Command []string `yaml:"command"`
							Args    []string `yaml:"args"`
						} `yaml:"containers"`
					} `yaml:"spec"`
				} `yaml:"template"`
			} `yaml:"spec"`
		}
		if d.Decode(&doc) != nil {
			break
		}
		if doc.Kind == "Deployment" {
			command, args = doc.Spec.Template.Spec.Containers[0].Command, doc.Spec.Template.Spec.Containers[0].Args
		}
	}
	if len(command) != 1 || command[0] != "kvrouter-epp" || len(args) == 0 {
		t.Fatalf("deployment runs %v %v, want kvrouter-epp with flags", command, args)
	}
	c := newEPPCmd()
	if err := c.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	env := []string{"KVROUTER_POOL_NAMESPACE=llm"}
	cfg, err := app.Resolve(c.Flags(), epp.DefaultConfig(), bindEPPFlags, env)
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if cfg.Pool.Namespace != "llm" || cfg.Pool.Selector != "app=vllm-llama3-8b" || len(cfg.Serve.ZMQBind) == 0 || !cfg.Serve.NoNATS ||
		cfg.Serve.Frontend.Router.BlockSize != 16 || cfg.GRPCAddr != "0.0.0.0:9002" {
		t.Fatalf("effective config %+v", cfg.Pool)
	}
}

// TestEPPPrintConfig: --print-config prints a file --config reads back to
// the same configuration.
func TestEPPPrintConfig(t *testing.T) {
	c := newEPPCmd()
	var out bytes.Buffer
	c.SetOut(&out)
	c.SetArgs([]string{"--print-config", "--grpc-addr", "127.0.0.1:7000", "--pool-selector", "app=x", "--body-mode", "buffered", "--fallbacks", "2"})
	if err := c.Execute(); err != nil {
		t.Fatal(err)
	}
	f := t.TempDir() + "/epp.yaml"
	if err := os.WriteFile(f, out.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	var back epp.Config = epp.DefaultConfig()
	if err := app.LoadFile(f, &back); err != nil {
		t.Fatal(err)
	}
	if back.GRPCAddr != "127.0.0.1:7000" || back.Pool.Selector != "app=x" || back.Protocol.BodyMode != "buffered" || back.Protocol.Fallbacks != 2 {
		t.Fatalf("round trip: %+v", back)
	}
}

// TestEPPFallbacksRange: --fallbacks outside [0, MaxFallbacks] is refused
// with a message naming it.
func TestEPPFallbacksRange(t *testing.T) {
	for _, v := range []string{"-1", "17"} {
		c := newEPPCmd()
		c.SetOut(io.Discard)
		c.SetErr(io.Discard)
		c.SetArgs([]string{"--print-config", "--fallbacks", v})
		err := c.Execute()
		if err == nil || !strings.Contains(err.Error(), "fallbacks "+v) {
			t.Errorf("--fallbacks %s: err %v, want one naming fallbacks", v, err)
		}
	}
}
