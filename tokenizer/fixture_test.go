package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// fixtureDir is where scripts/fetch-tokenizers puts the HF fixtures.
func fixtureDir() string {
	if d := os.Getenv("KVROUTER_TOKENIZER_CACHE"); d != "" {
		return d
	}
	return filepath.Join("..", ".cache", "tokenizers")
}

var (
	fixMu    sync.Mutex
	fixtures = map[string]*Local{}
)

// loadFixture loads (once per test binary) the fixture model, skipping when
// the cache is missing outside CI and failing under CI=true.
func loadFixture(tb testing.TB, model string) *Local {
	tb.Helper()
	fixMu.Lock()
	defer fixMu.Unlock()
	if l, ok := fixtures[model]; ok {
		return l
	}
	dir := filepath.Join(fixtureDir(), model)
	if model == "unigram" { // derived from the Mistral fixture
		dir = filepath.Join(fixtureDir(), "llama2")
	}
	if _, err := os.Stat(filepath.Join(dir, "tokenizer.json")); err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("tokenizer fixture %s missing under CI (run scripts/setup-test-deps): %v", dir, err)
		}
		tb.Skipf("tokenizer fixture %s missing; run scripts/fetch-tokenizers to enable this test", dir)
	}
	l, err := Load(dir, Options{})
	if model == "unigram" && err == nil {
		l, err = unigramFixture(dir)
	}
	if err != nil {
		tb.Fatalf("load %s: %v", dir, err)
	}
	fixtures[model] = l
	return l
}

type goldenFile struct {
	Model  string `json:"model"`
	Encode []struct {
		Name             string   `json:"name"`
		AddSpecialTokens bool     `json:"add_special_tokens"`
		Text             string   `json:"text"`
		IDs              []uint32 `json:"ids"`
		// Decoded is the reference's decode of IDs (SentencePiece-style
		// models, whose ids do not decode back to the text).
		Decoded *string `json:"decoded"`
	} `json:"encode"`
	Chat []struct {
		Name                string    `json:"name"`
		AddGenerationPrompt bool      `json:"add_generation_prompt"`
		Messages            []Message `json:"messages"`
		Text                string    `json:"text"`
		IDs                 []uint32  `json:"ids"`
		Error               string    `json:"error"` // the template raised this
	} `json:"chat"`
}

func readGolden(tb testing.TB, model string) *goldenFile {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "golden", model+".json"))
	if err != nil {
		tb.Fatal(err)
	}
	var g goldenFile
	if err := json.Unmarshal(b, &g); err != nil {
		tb.Fatal(err)
	}
	if len(g.Encode) == 0 {
		tb.Fatalf("golden %s has no cases", model)
	}
	return &g
}
