package main

import (
	"fmt"
	"os"
	"time"

	"github.com/kvrouter/kvrouter/internal/fleet"
	"github.com/kvrouter/kvrouter/internal/frontend"
	"github.com/kvrouter/kvrouter/mocker"
	"github.com/kvrouter/kvrouter/router"
	"github.com/spf13/cobra"
)

func newUpCmd() *cobra.Command {
	var (
		workers           int
		port              int
		host, policy, tok string
		logLevel          string
		speedup           float64
		apiKeys           []string
		maxPrompt         int
	)
	eng := mocker.DefaultConfig()
	c := &cobra.Command{
		Use:   "up",
		Short: "Start a whole local fleet: embedded NATS, N mocker workers and the router",
		Long: `Starts, in one process, an embedded NATS server (JetStream), N simulated vLLM workers
(each with its own HTTP listener on 127.0.0.1) publishing KV events and registering
themselves, and the KV-aware router on --port. Needs nothing from the network: the
default model uses a tokenizer compiled into the binary. Ctrl-C stops everything.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := newLogger(logLevel)
			if err != nil {
				return err
			}
			p, err := router.ParsePolicy(policy)
			if err != nil {
				return err
			}
			eng.SpeedupRatio = speedup
			t, err := loadTokenizer(tok, "kvrouter-mock", nil)
			if err != nil {
				return err
			}
			fc := frontend.DefaultConfig()
			fc.Router.Mode, fc.APIKeys, fc.MaxPromptTokens = p, apiKeys, maxPrompt
			fc.DrainTimeout = 5 * time.Second // Ctrl-C should not hang on a long stream
			f, err := fleet.New(fleet.Config{Workers: workers, Engine: eng, Tokenizer: t, Frontend: fc,
				RouterAddr: fmt.Sprintf("%s:%d", host, port), Logger: log})
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			done := make(chan error, 1)
			go func() { done <- f.Run(ctx) }()
			select {
			case <-f.Ready():
				printBanner(f, apiKeys)
			case err := <-done:
				return err
			}
			err = <-done
			fmt.Fprintln(os.Stderr, "kvrouter: stopped")
			return err
		},
	}
	fl := c.Flags()
	fl.IntVar(&workers, "workers", 4, "number of mocker workers")
	fl.IntVar(&port, "port", 8080, "router port")
	fl.StringVar(&host, "host", "127.0.0.1", "router listen host")
	fl.StringVar(&policy, "policy", "kv", "kv, approx, load, round-robin or random")
	fl.StringVar(&tok, "tokenizer", "builtin", "builtin, or a tokenizer.json file / model directory (router and workers)")
	fl.IntVar(&eng.BlockSize, "block-size", eng.BlockSize, "tokens per KV block")
	fl.IntVar(&eng.NumBlocks, "num-blocks", eng.NumBlocks, "KV capacity per worker, in blocks")
	fl.Float64Var(&speedup, "speedup-ratio", 1, "workers run this much faster than the modeled GPU (0 = no sleeping)")
	fl.StringArrayVar(&apiKeys, "api-key", nil, "require this client API key (repeatable)")
	fl.IntVar(&maxPrompt, "max-prompt-tokens", 131072, "longest prompt accepted in tokens, 400 beyond (0 = no limit)")
	fl.StringVar(&logLevel, "log-level", "warn", "debug, info, warn or error")
	return c
}

func printBanner(f *fleet.Fleet, keys []string) {
	auth := ""
	if len(keys) > 0 {
		auth = " -H 'Authorization: Bearer " + keys[0] + "'"
	}
	fmt.Printf(`kvrouter is up: router %s, %d mocker workers, embedded NATS %s

Try a streamed completion:

  curl -sN %s/v1/completions -H 'Content-Type: application/json'%s \
    -d '{"model":"kvrouter-mock","prompt":"Explain KV-cache-aware routing in one paragraph.","max_tokens":32,"stream":true}'

Add -i to see which worker served it (x-kvrouter-worker) and the cached prefix it found
(x-kvrouter-overlap-blocks). Send a long prompt twice: the second lands on the same worker.
Routing decision without proxying:  curl -s %s/route -d '{"prompt":"hello"}'
Metrics:                            curl -s %s/metrics | grep ^kvrouter_
Index per worker:                   curl -s %s/debug/index

Ctrl-C stops everything.
`, f.URL(), len(f.Workers()), f.NATSURL(), f.URL(), auth, f.URL(), f.URL(), f.URL())
}
