package main

import (
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/kvrouter/kvrouter/internal/eventdump"
)

func newEventsDecodeCmd() *cobra.Command {
	var cfg eventdump.DecodeConfig
	c := &cobra.Command{
		Use:   "decode --format vllm|json|msgpack [--block-size B] [--worker-id N] [--dp-rank R] [--hex] [FILE]",
		Short: "Decode one KV event payload and print it as RouterEvent JSON lines",
		Long: `decode reads one payload from FILE (stdin without FILE) and prints the
resulting RouterEvents as JSON lines, in Dynamo's RouterEvent JSON (DESIGN.md §2).

Formats:
  vllm     a vLLM/SGLang ZMQ payload (msgpack [ts, events, dp_rank?] or its map
           form). --block-size is required and must equal the engine's; local
           hashes are computed from token_ids. --worker-id is stamped on every
           event; --dp-rank is used when the payload carries no rank.
  json     one RouterEvent, JSON lines, or a JSON array of events.
  msgpack  one msgpack RouterEvent (maps with the JSON field names), a
           concatenation of them, or an array of them.
For json and msgpack, --worker-id and --dp-rank override the events' own
values when given.

With --hex the input is hex text (whitespace and a leading 0x ignored).
Bad input is an error and a non-zero exit; events that decoded before
(or, for vllm, beside) a bad one are still printed.`,
		Example: `  kvrouter events decode --format vllm --block-size 16 --hex payload.hex
  kvrouter events decode --format json events.jsonl`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var in io.Reader = cmd.InOrStdin()
			name := "stdin"
			if len(args) == 1 {
				f, err := os.Open(args[0])
				if err != nil {
					return err
				}
				defer f.Close()
				in, name = f, args[0]
			}
			cfg.SetWorkerID = cmd.Flags().Changed("worker-id")
			cfg.SetDPRank = cmd.Flags().Changed("dp-rank")
			return eventdump.Decode(cmd.OutOrStdout(), in, name, cfg)
		},
	}
	f := c.Flags()
	f.StringVar(&cfg.Format, "format", "", "payload format: vllm, json or msgpack (required)")
	f.IntVar(&cfg.BlockSize, "block-size", 0, "engine block size in tokens (required for vllm)")
	f.Uint64Var(&cfg.WorkerID, "worker-id", 0, "worker id to stamp on the events")
	f.Uint32Var(&cfg.DPRank, "dp-rank", 0, "data-parallel rank (vllm: used when the payload has none)")
	f.BoolVar(&cfg.Hex, "hex", false, "input is hex text rather than raw bytes")
	_ = c.MarkFlagRequired("format")
	return c
}
