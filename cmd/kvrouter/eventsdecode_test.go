package main

import (
	"bytes"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvrouter/kvrouter/kvevents"
)

// runDecode runs "kvrouter events decode ARGS" in-process.
func runDecode(t *testing.T, stdin []byte, args ...string) (string, error) {
	t.Helper()
	root := newRootCmd()
	var out bytes.Buffer
	root.SetIn(bytes.NewReader(stdin))
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(append([]string{"events", "decode"}, args...))
	err := root.Execute()
	return out.String(), err
}

func TestEventsDecodeVLLMHexFile(t *testing.T) {
	out, err := runDecode(t, nil, "--format", "vllm", "--block-size", "4", "--worker-id", "9", "--hex",
		filepath.Join("..", "..", "kvevents", "testdata", "vllm_map.hex"))
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
	if out != want {
		t.Fatalf("got\n%s\nwant\n%s", out, want)
	}
}

func TestEventsDecodeVLLMRawStdin(t *testing.T) {
	text, err := os.ReadFile(filepath.Join("..", "..", "kvevents", "testdata", "vllm_eagle.hex"))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := hex.DecodeString(strings.TrimSpace(string(text)))
	if err != nil {
		t.Fatal(err)
	}
	out, err := runDecode(t, raw, "--format", "vllm", "--block-size", "4", "--dp-rank", "5")
	if err != nil {
		t.Fatal(err)
	}
	var ev kvevents.Event
	if err := kvevents.DecodeJSON([]byte(strings.TrimSpace(out)), &ev); err != nil {
		t.Fatalf("%q: %v", out, err)
	}
	if ev.DPRank != 5 || len(ev.Blocks) != 2 || ev.Blocks[0].Local != 9143094415614847814 {
		t.Fatalf("got %v", ev)
	}
}

func TestEventsDecodeBlockSizeMismatch(t *testing.T) {
	out, err := runDecode(t, nil, "--format", "vllm", "--block-size", "32", "--hex",
		filepath.Join("..", "..", "kvevents", "testdata", "deps_short.hex"))
	if err == nil || !strings.Contains(err.Error(), "16") || !strings.Contains(err.Error(), "32") || out != "" {
		t.Fatalf("out %q err %v", out, err)
	}
}

func TestEventsDecodeJSONAndMsgpack(t *testing.T) {
	evs := []kvevents.Event{
		{WorkerID: 1, EventID: 2, Kind: kvevents.KindStored, Blocks: []kvevents.Block{{Hash: 18446744073709551615, Local: 4}}},
		{WorkerID: 1, EventID: 3, DPRank: 2, Tier: kvevents.TierDisk, Kind: kvevents.KindRemoved, Hashes: []uint64{18446744073709551615}},
	}
	var lines, mp []byte
	for i := range evs {
		lines = append(kvevents.AppendJSON(lines, &evs[i]), '\n')
		mp = kvevents.AppendMsgpack(mp, &evs[i])
	}
	out, err := runDecode(t, lines, "--format", "json")
	if err != nil || out != string(lines) {
		t.Fatalf("json: %q %v", out, err)
	}
	out, err = runDecode(t, []byte(hex.EncodeToString(mp)+"\n"), "--format", "msgpack", "--hex", "--worker-id", "7")
	if err != nil || out != strings.ReplaceAll(string(lines), `"worker_id":1`, `"worker_id":7`) {
		t.Fatalf("msgpack: %q %v", out, err)
	}
}

func TestEventsDecodeErrors(t *testing.T) {
	cases := []struct {
		stdin string
		args  []string
		want  string
	}{
		{"", []string{"--format", "json"}, "empty input"},
		{"{}", []string{"--format", "yaml"}, "--format must be"},
		{"90", []string{"--format", "vllm", "--hex"}, "--block-size"},
		{"zz", []string{"--format", "vllm", "--block-size", "4", "--hex"}, "bad hex"},
		{"c0", []string{"--format", "vllm", "--block-size", "4", "--hex"}, "malformed"},
		{`{"worker_id":1}`, []string{"--format", "json"}, "missing event"},
		{"{}", []string{}, `required flag(s) "format"`},
		{"", []string{"--format", "json", "/nonexistent/file"}, "no such file"},
	}
	for _, c := range cases {
		_, err := runDecode(t, []byte(c.stdin), c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err %v, want it to mention %q", c.args, err, c.want)
		}
	}
}
