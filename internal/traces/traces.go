package traces

import (
	"bytes"
	"embed"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kvrouter/kvrouter/trace"
)

//go:embed data/*.gz
var files embed.FS

// Default is the name of the default trace.
const Default = "conversation"

// builtin maps a shipped trace's name to its file and reader.
var builtin = map[string]struct {
	file  string
	azure bool
}{
	"conversation": {file: "conversation_trace.jsonl.gz"},
	"synth":        {file: "synth.jsonl.gz"},
	"azure-code":   {file: "AzureLLMInferenceTrace_code.csv.gz", azure: true},
	"azure-conv":   {file: "AzureLLMInferenceTrace_conv.csv.gz", azure: true},
}

// Names lists the shipped traces in report order (Default first).
var Names = []string{"conversation", "synth", "azure-code", "azure-conv"}

// AzureSeed seeds the prefix synthesis of Azure traces, so every run
// of every command sees the same prefixes.
const AzureSeed = 1

// Load returns the records of a shipped trace (by name) or of a file (by
// path): Mooncake JSON Lines, or an Azure CSV (name ending .csv or .csv.gz)
// whose prefixes are synthesized with trace.DefaultPrefixModel seeded
// AzureSeed. "" means Default.
func Load(nameOrPath string) ([]trace.Record, error) {
	if nameOrPath == "" {
		nameOrPath = Default
	}
	if b, ok := builtin[nameOrPath]; ok {
		data, err := files.ReadFile("data/" + b.file)
		if err != nil {
			return nil, fmt.Errorf("traces: %s: %w", nameOrPath, err)
		}
		return decode(nameOrPath, bytes.NewReader(data), b.azure)
	}
	f, err := os.Open(nameOrPath)
	if err != nil {
		return nil, fmt.Errorf("traces: %w (shipped traces: %s)", err, strings.Join(Names, ", "))
	}
	defer f.Close()
	base := strings.TrimSuffix(filepath.Base(nameOrPath), ".gz")
	return decode(nameOrPath, f, strings.HasSuffix(base, ".csv"))
}

func decode(name string, r io.Reader, azure bool) ([]trace.Record, error) {
	if !azure {
		recs, err := trace.ReadAll(r)
		if err != nil {
			return nil, fmt.Errorf("traces: %s: %w", name, err)
		}
		return recs, nil
	}
	recs, err := trace.ReadAzureCSV(r)
	if err != nil {
		return nil, fmt.Errorf("traces: %s: %w", name, err)
	}
	return trace.SynthesizePrefixes(recs, trace.DefaultPrefixModel(), rand.New(rand.NewPCG(AzureSeed, 0)))
}

// Short returns a short label for a trace name or path (its base name
// without extensions), for tables.
func Short(nameOrPath string) string {
	if nameOrPath == "" {
		return Default
	}
	if slices.Contains(Names, nameOrPath) {
		return nameOrPath
	}
	b := filepath.Base(nameOrPath)
	for _, ext := range []string{".gz", ".jsonl", ".csv", ".json"} {
		b = strings.TrimSuffix(b, ext)
	}
	return b
}
