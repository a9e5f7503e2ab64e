package eventdump

import (
	"bytes"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvrouter/kvrouter/kvevents"
)

func TestDecodeHex(t *testing.T) {
	for _, c := range []struct {
		in, want, err string
	}{
		{"0a0b", "\x0a\x0b", ""},
		{" 0x0A\n0b\r\n\t", "\x0a\x0b", ""},
		{"0X", "", ""},
		{"", "", ""},
		{"zz", "", "bad hex input"},
		{"abc", "", "bad hex input"},
		{"0x 0x01", "", "bad hex input"}, // only a leading 0x is dropped
	} {
		got, err := DecodeHex([]byte(c.in))
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: err %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || string(got) != c.want {
			t.Errorf("%q: got %x, %v; want %x", c.in, got, err, c.want)
		}
	}
}

// TestDecodeVLLMGolden decodes the shipped vLLM payloads as hex text: the
// JSON lines carry the events the kvevents decoder reads from them.
func TestDecodeVLLMGolden(t *testing.T) {
	path := filepath.Join("..", "..", "kvevents", "testdata", "vllm_map.hex")
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err = Decode(&out, bytes.NewReader(text), "vllm_map.hex", DecodeConfig{Format: "vllm", BlockSize: 4, WorkerID: 9, Hex: true})
	if err != nil {
		t.Fatal(err)
	}
	// The kvevents golden output for the same payload, less its
	// BatchInfo line.
	golden, err := os.ReadFile(filepath.Join("..", "..", "kvevents", "testdata", "vllm_map.golden"))
	if err != nil {
		t.Fatal(err)
	}
	_, want, _ := strings.Cut(string(golden), "\n")
	if out.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", out.String(), want)
	}
}

// TestDecodeOverrides: json and msgpack events keep their own worker and
// rank unless the Set flags say otherwise.
func TestDecodeOverrides(t *testing.T) {
	ev := kvevents.Event{WorkerID: 1, EventID: 2, DPRank: 3, Kind: kvevents.KindCleared}
	raw := kvevents.AppendMsgpack(nil, &ev)
	for _, c := range []struct {
		cfg  DecodeConfig
		want kvevents.Event
	}{
		{DecodeConfig{Format: "msgpack", WorkerID: 7, DPRank: 8}, ev},
		{DecodeConfig{Format: "msgpack", WorkerID: 7, SetWorkerID: true}, kvevents.Event{WorkerID: 7, EventID: 2, DPRank: 3, Kind: kvevents.KindCleared}},
		{DecodeConfig{Format: "msgpack", DPRank: 8, SetDPRank: true}, kvevents.Event{WorkerID: 1, EventID: 2, DPRank: 8, Kind: kvevents.KindCleared}},
	} {
		var out bytes.Buffer
		if err := Decode(&out, bytes.NewReader(raw), "x", c.cfg); err != nil {
			t.Fatal(err)
		}
		want := string(kvevents.AppendJSON(nil, &c.want)) + "\n"
		if out.String() != want {
			t.Errorf("%+v: got %s want %s", c.cfg, out.String(), want)
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	for _, c := range []struct {
		in   string
		cfg  DecodeConfig
		want string
	}{
		{"", DecodeConfig{Format: "json"}, "in: empty input"},
		{"{}", DecodeConfig{Format: "yaml"}, `--format must be vllm, json or msgpack, got "yaml"`},
		{"90", DecodeConfig{Format: "vllm", Hex: true}, "--block-size"},
		{"zz", DecodeConfig{Format: "vllm", BlockSize: 4, Hex: true}, "in: bad hex input"},
		{"c0", DecodeConfig{Format: "vllm", BlockSize: 4, Hex: true}, "decode in as vllm: "},
		{`{"worker_id":1}`, DecodeConfig{Format: "json"}, "missing event"},
	} {
		var out bytes.Buffer
		err := Decode(&out, strings.NewReader(c.in), "in", c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q %+v: err %v, want it to mention %q", c.in, c.cfg, err, c.want)
		}
	}
}

// FuzzDecode: no payload, in any format, panics; whatever decodes before
// an error is still valid JSON lines.
func FuzzDecode(f *testing.F) {
	for _, name := range []string{"vllm_map.hex", "vllm_array.hex", "deps_short.hex", "vllm_eagle.hex"} {
		text, err := os.ReadFile(filepath.Join("..", "..", "kvevents", "testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		raw, err := hex.DecodeString(strings.TrimSpace(string(text)))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw, uint8(0))
	}
	f.Add([]byte(`{"worker_id":1,"event":{"event_id":1,"data":"cleared"}}`), uint8(1))
	f.Add([]byte{0x90}, uint8(2))
	formats := []string{"vllm", "json", "msgpack"}
	f.Fuzz(func(t *testing.T, data []byte, format uint8) {
		var out bytes.Buffer
		_ = Decode(&out, bytes.NewReader(data), "fuzz", DecodeConfig{Format: formats[int(format)%3], BlockSize: 4})
		for _, line := range bytes.Split(bytes.TrimSuffix(out.Bytes(), []byte("\n")), []byte("\n")) {
			if len(line) == 0 {
				continue
			}
			var ev kvevents.Event
			if err := kvevents.DecodeJSON(line, &ev); err != nil {
				t.Fatalf("line %q does not decode: %v", line, err)
			}
		}
	})
}
