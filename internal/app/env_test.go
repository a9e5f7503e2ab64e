package app

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestCheckEnv: a KVROUTER_* variable that names no flag is refused with
// the closest one; flags' own variables, other programs' variables and the
// repository's script variables pass.
func TestCheckEnv(t *testing.T) {
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	for _, n := range []string{"worker", "workers-file", "busy-kv-usage", "block-size", "config", "print-config"} {
		fs.String(n, "", "")
	}
	ok := []string{"KVROUTER_WORKER=http://a", "KVROUTER_BUSY_KV_USAGE=0.9", "KVROUTER_CONFIG=f.yaml", "PATH=/bin",
		"KVROUTER_BENCH_REQUESTS=10", "KVROUTER_TOKENIZER_CACHE=/tmp", "NOTKVROUTER_X=1", "MALFORMED"}
	if err := CheckEnv(fs, ok); err != nil {
		t.Fatalf("known variables refused: %v", err)
	}
	for _, tc := range []struct{ env, want string }{
		{"KVROUTER_WORKER_URL=http://a", `KVROUTER_WORKER_URL names no flag of "serve" (did you mean KVROUTER_WORKER?)`},
		{"KVROUTER_BUSY_KV_USEAGE=0.9", "(did you mean KVROUTER_BUSY_KV_USAGE?)"},
		{"KVROUTER_BLOKSIZE=16", "(did you mean KVROUTER_BLOCK_SIZE?)"},
		{"KVROUTER_PRINT_CONFIG=1", `KVROUTER_PRINT_CONFIG names no flag of "serve"; unset it`},
		{"KVROUTER_TAIL_WEIGHT=1", `KVROUTER_TAIL_WEIGHT names no flag of "serve"; unset it`},
	} {
		err := CheckEnv(fs, append([]string{"KVROUTER_WORKER=x"}, tc.env))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want one containing %q", tc.env, err, tc.want)
		}
	}
	// Every unknown variable is named, not only the first.
	err := CheckEnv(fs, []string{"KVROUTER_A=1", "KVROUTER_B=2"})
	if err == nil || !strings.Contains(err.Error(), "KVROUTER_A ") || !strings.Contains(err.Error(), "KVROUTER_B ") {
		t.Errorf("two unknown variables: %v", err)
	}
}

// TestResolveRefusesUnknownEnv: Resolve, the one reader of the
// environment, refuses an unknown KVROUTER_* variable before building
// anything (it used to be ignored: the config came out as if unset).
func TestResolveRefusesUnknownEnv(t *testing.T) {
	bind := func(fs *pflag.FlagSet, c *MockerConfig) {
		fs.IntVar(&c.Mocker.Engine.NumBlocks, "num-blocks", c.Mocker.Engine.NumBlocks, "")
	}
	parsed := pflag.NewFlagSet("mocker", pflag.ContinueOnError)
	def := DefaultMockerConfig()
	bind(parsed, &def)
	cfg, err := Resolve(parsed, def, bind, []string{"KVROUTER_NUM_BLOCKS=512"})
	if err != nil || cfg.Mocker.Engine.NumBlocks != 512 {
		t.Fatalf("KVROUTER_NUM_BLOCKS=512: %d, %v", cfg.Mocker.Engine.NumBlocks, err)
	}
	_, err = Resolve(parsed, def, bind, []string{"KVROUTER_NUM_BLOCK=512"})
	if err == nil || !strings.Contains(err.Error(), "did you mean KVROUTER_NUM_BLOCKS?") {
		t.Fatalf("KVROUTER_NUM_BLOCK: err %v", err)
	}
}
