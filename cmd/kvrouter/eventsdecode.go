package main

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/kvrouter/kvrouter/kvevents"
)

func newEventsDecodeCmd() *cobra.Command {
	var (
		format    string
		blockSize int
		workerID  uint64
		dpRank    uint32
		hexInput  bool
	)
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
			data, err := io.ReadAll(in)
			if err != nil {
				return fmt.Errorf("read %s: %w", name, err)
			}
			if hexInput {
				if data, err = decodeHexText(data); err != nil {
					return fmt.Errorf("%s: %w", name, err)
				}
			}
			if len(bytes.TrimSpace(data)) == 0 {
				return fmt.Errorf("%s: empty input", name)
			}
			var evs []kvevents.Event
			var decErr error
			switch format {
			case "vllm":
				if blockSize <= 0 {
					return errors.New("--format vllm needs --block-size (the engine's block size, > 0)")
				}
				dec, err := kvevents.NewVLLMDecoder(kvevents.VLLMConfig{BlockSize: blockSize, WorkerID: workerID, DPRank: dpRank})
				if err != nil {
					return err
				}
				evs, decErr = dec.Decode(nil, data)
			case "json":
				evs, decErr = kvevents.DecodeJSONEvents(nil, data)
			case "msgpack":
				evs, decErr = kvevents.DecodeMsgpackEvents(nil, data)
			default:
				return fmt.Errorf("--format must be vllm, json or msgpack, got %q", format)
			}
			if format != "vllm" {
				for i := range evs {
					if cmd.Flags().Changed("worker-id") {
						evs[i].WorkerID = workerID
					}
					if cmd.Flags().Changed("dp-rank") {
						evs[i].DPRank = dpRank
					}
				}
			}
			var out []byte
			for i := range evs {
				out = kvevents.AppendJSON(out, &evs[i])
				out = append(out, '\n')
			}
			if _, err := cmd.OutOrStdout().Write(out); err != nil {
				return err
			}
			if decErr != nil {
				return fmt.Errorf("decode %s as %s: %w", name, format, decErr)
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&format, "format", "", "payload format: vllm, json or msgpack (required)")
	f.IntVar(&blockSize, "block-size", 0, "engine block size in tokens (required for vllm)")
	f.Uint64Var(&workerID, "worker-id", 0, "worker id to stamp on the events")
	f.Uint32Var(&dpRank, "dp-rank", 0, "data-parallel rank (vllm: used when the payload has none)")
	f.BoolVar(&hexInput, "hex", false, "input is hex text rather than raw bytes")
	_ = c.MarkFlagRequired("format")
	return c
}

// decodeHexText decodes hex text, ignoring whitespace and a leading 0x.
func decodeHexText(text []byte) ([]byte, error) {
	clean := make([]byte, 0, len(text))
	for _, c := range text {
		switch c {
		case ' ', '\t', '\n', '\r':
		default:
			clean = append(clean, c)
		}
	}
	if len(clean) >= 2 && clean[0] == '0' && (clean[1] == 'x' || clean[1] == 'X') {
		clean = clean[2:]
	}
	out := make([]byte, hex.DecodedLen(len(clean)))
	if _, err := hex.Decode(out, clean); err != nil {
		return nil, fmt.Errorf("bad hex input: %w", err)
	}
	return out, nil
}
