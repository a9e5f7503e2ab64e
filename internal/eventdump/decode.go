package eventdump

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	"github.com/kvrouter/kvrouter/kvevents"
)

// DecodeConfig says how Decode reads a payload.
type DecodeConfig struct {
	// Format is vllm, json or msgpack.
	Format string
	// BlockSize is the engine's block size (vllm only; required, > 0).
	BlockSize int
	// WorkerID is stamped on vllm events; with SetWorkerID it overrides
	// json and msgpack events' own.
	WorkerID    uint64
	SetWorkerID bool
	// DPRank is vllm's rank when the payload carries none; with SetDPRank
	// it overrides json and msgpack events' own.
	DPRank    uint32
	SetDPRank bool
	// Hex: the input is hex text (DecodeHex) rather than raw bytes.
	Hex bool
}

// Decode reads one payload from in (named name in errors) and writes its
// events to w as JSON lines. Events decoded before (or, for vllm, beside)
// a bad one are written before the error is returned.
func Decode(w io.Writer, in io.Reader, name string, cfg DecodeConfig) error {
	data, err := io.ReadAll(in)
	if err != nil {
		return fmt.Errorf("read %s: %w", name, err)
	}
	if cfg.Hex {
		if data, err = DecodeHex(data); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return fmt.Errorf("%s: empty input", name)
	}
	var evs []kvevents.Event
	var decErr error
	switch cfg.Format {
	case "vllm":
		if cfg.BlockSize <= 0 {
			return errors.New("--format vllm needs --block-size (the engine's block size, > 0)")
		}
		dec, err := kvevents.NewVLLMDecoder(kvevents.VLLMConfig{BlockSize: cfg.BlockSize, WorkerID: cfg.WorkerID, DPRank: cfg.DPRank})
		if err != nil {
			return err
		}
		evs, decErr = dec.Decode(nil, data)
	case "json":
		evs, decErr = kvevents.DecodeJSONEvents(nil, data)
	case "msgpack":
		evs, decErr = kvevents.DecodeMsgpackEvents(nil, data)
	default:
		return fmt.Errorf("--format must be vllm, json or msgpack, got %q", cfg.Format)
	}
	if cfg.Format != "vllm" {
		for i := range evs {
			if cfg.SetWorkerID {
				evs[i].WorkerID = cfg.WorkerID
			}
			if cfg.SetDPRank {
				evs[i].DPRank = cfg.DPRank
			}
		}
	}
	var out []byte
	for i := range evs {
		out = kvevents.AppendJSON(out, &evs[i])
		out = append(out, '\n')
	}
	if _, err := w.Write(out); err != nil {
		return err
	}
	if decErr != nil {
		return fmt.Errorf("decode %s as %s: %w", name, cfg.Format, decErr)
	}
	return nil
}

// DecodeHex decodes hex text, ignoring whitespace and a leading 0x.
func DecodeHex(text []byte) ([]byte, error) {
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
