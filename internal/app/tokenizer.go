package app

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/kvrouter/kvrouter/internal/frontend"
	"github.com/kvrouter/kvrouter/internal/tokenizer/remote"
	"github.com/kvrouter/kvrouter/tokenizer"
)

// Tokenizer specs (--tokenizer); anything else is a tokenizer.json file or
// a model directory.
const (
	// TokenizerAuto: the model's own tokenizer.json when one is found (the
	// built-in one for the mock model), else the workers' /tokenize, else
	// an error saying what to pass.
	TokenizerAuto = "auto"
	// TokenizerBuiltin: cl100k_base compiled into the binary.
	TokenizerBuiltin = "builtin"
	// TokenizerRemote: the workers' POST /tokenize.
	TokenizerRemote = "remote"
)

// Tokenizer is what a tokenizer spec resolved to.
type Tokenizer struct {
	tokenizer.Tokenizer
	// Source says where it came from: "builtin", "remote" or the path it
	// was loaded from.
	Source string
	// Own: the served model's own tokenizer (its tokenizer.json, or the
	// built-in one for the mock model), whose ids may be forwarded to
	// workers that pass the self-test (frontend.Config.OwnTokenizer). The
	// built-in one for another model and the remote one route only.
	Own bool
	// Note says why TokenizerAuto chose the remote tokenizer; "" otherwise.
	Note string
}

// LoadTokenizer is ResolveTokenizer's tokenizer.
func LoadTokenizer(spec, model string, remoteURLs []string) (tokenizer.Tokenizer, error) {
	t, err := ResolveTokenizer(spec, model, remoteURLs)
	return t.Tokenizer, err
}

// ResolveTokenizer resolves a tokenizer spec for model: TokenizerAuto (or
// ""), TokenizerBuiltin ("default" too), TokenizerRemote (asking
// remoteURLs), or a tokenizer.json file / model directory.
//
// TokenizerAuto tries, in order: the built-in tokenizer when model is
// DefaultModel (the mocker's); model itself as a local path (a model
// directory or a tokenizer.json); the Hugging Face cache (HFSnapshot);
// the workers' /tokenize when remoteURLs is not empty. With none of them
// it returns an error naming each place it looked and what to pass.
func ResolveTokenizer(spec, model string, remoteURLs []string) (Tokenizer, error) {
	switch spec {
	case TokenizerBuiltin, "default":
		t, err := tokenizer.Default(tokenizer.Options{})
		return Tokenizer{Tokenizer: t, Source: TokenizerBuiltin, Own: model == DefaultModel}, err
	case TokenizerRemote:
		return remoteTokenizer(model, remoteURLs)
	case TokenizerAuto, "":
		return autoTokenizer(model, remoteURLs)
	}
	t, err := tokenizer.Load(spec, tokenizer.Options{})
	return Tokenizer{Tokenizer: t, Source: spec, Own: true}, err
}

func remoteTokenizer(model string, urls []string) (Tokenizer, error) {
	if len(urls) == 0 {
		return Tokenizer{}, errors.New("tokenizer remote needs worker URLs (--tokenizer-url or --worker)")
	}
	t, err := remote.New(remote.Config{Endpoints: urls, Model: model, Client: &http.Client{Timeout: 30 * time.Second}})
	return Tokenizer{Tokenizer: t, Source: TokenizerRemote}, err
}

func autoTokenizer(model string, urls []string) (Tokenizer, error) {
	if model == DefaultModel {
		return ResolveTokenizer(TokenizerBuiltin, model, nil)
	}
	var looked []string
	var loadErr error
	try := func(path string) (Tokenizer, bool) {
		t, err := tokenizer.Load(path, tokenizer.Options{Name: model})
		if err != nil {
			loadErr = errors.Join(loadErr, err)
			return Tokenizer{}, false
		}
		return Tokenizer{Tokenizer: t, Source: path, Own: true}, true
	}
	if st, err := os.Stat(model); err == nil {
		path := model
		if st.IsDir() {
			path = filepath.Join(model, "tokenizer.json")
		}
		if _, err := os.Stat(path); err == nil {
			if t, ok := try(model); ok {
				return t, nil
			}
		}
		looked = append(looked, path)
	}
	dir, where := HFSnapshot(model)
	if dir != "" {
		if t, ok := try(dir); ok {
			return t, nil
		}
	}
	looked = append(looked, where)
	if len(urls) > 0 {
		t, err := remoteTokenizer(model, urls)
		t.Note = "no tokenizer.json at " + strings.Join(looked, " or ")
		if loadErr != nil {
			t.Note = "cannot load the tokenizer.json found: " + loadErr.Error()
		}
		return t, err
	}
	msg := fmt.Sprintf("no tokenizer for model %q: no tokenizer.json at %s, and no worker URLs to ask /tokenize; "+
		"pass --tokenizer PATH (the model's tokenizer.json or its directory), "+
		"--tokenizer remote --tokenizer-url http://WORKER:PORT (the engines' /tokenize), "+
		"or --tokenizer builtin (route with the built-in cl100k_base; token ids are then never forwarded)",
		model, strings.Join(looked, " or "))
	if loadErr != nil {
		return Tokenizer{}, fmt.Errorf("%s: %w", msg, loadErr)
	}
	return Tokenizer{}, errors.New(msg)
}

// logTokenizer logs once what serve tokenizes with and whether token ids
// may be forwarded.
func logTokenizer(log *slog.Logger, spec string, fc frontend.Config, t Tokenizer) {
	attrs := []any{"spec", cmp.Or(spec, TokenizerAuto), "model", fc.Model, "tokenizer", t.Name(), "source", t.Source,
		"forward_ids", fc.ForwardTokens && t.Own}
	switch {
	case t.Source == TokenizerBuiltin && !t.Own:
		log.Warn("tokenizer: the built-in cl100k_base for a model that is not the mock model: "+
			"routing only, token ids are never forwarded (pass the model's tokenizer.json with --tokenizer)", attrs...)
	case t.Source == TokenizerRemote:
		log.Info("tokenizer: the workers' /tokenize (routing only; engines get the client's text)", append(attrs, "note", t.Note)...)
	default:
		log.Info("tokenizer", attrs...)
	}
}

// HFHub is the Hugging Face hub cache directory, as huggingface_hub
// computes it: $HF_HUB_CACHE, else $HF_HOME/hub, else
// $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub.
func HFHub() string {
	if d := os.Getenv("HF_HUB_CACHE"); d != "" {
		return d
	}
	if d := os.Getenv("HF_HOME"); d != "" {
		return filepath.Join(d, "hub")
	}
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "huggingface", "hub")
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "huggingface", "hub")
}

// HFSnapshot finds model's tokenizer.json in the Hugging Face cache
// (HFHub): models--ORG--NAME/snapshots/<rev>/, with <rev> from refs/main
// when that file exists, else the most recently modified snapshot that
// has a tokenizer.json. It returns the snapshot directory ("" when none
// has one) and where it looked (for messages).
func HFSnapshot(model string) (dir, where string) {
	hub := HFHub()
	name := "models--" + strings.ReplaceAll(model, "/", "--")
	if model == "" || !filepath.IsLocal(name) || strings.ContainsAny(name, `\`) {
		return "", filepath.Join(hub, name)
	}
	repo := filepath.Join(hub, name)
	snaps := filepath.Join(repo, "snapshots")
	if ref, err := os.ReadFile(filepath.Join(repo, "refs", "main")); err == nil {
		rev := strings.TrimSpace(string(ref))
		where = filepath.Join(snaps, cmp.Or(rev, "<empty refs/main>"), "tokenizer.json")
		if rev == "" || !filepath.IsLocal(rev) || strings.ContainsAny(rev, `/\`) {
			return "", where
		}
		if _, err := os.Stat(where); err != nil {
			return "", where
		}
		return filepath.Dir(where), where
	}
	where = filepath.Join(snaps, "*", "tokenizer.json")
	ents, err := os.ReadDir(snaps)
	if err != nil {
		return "", where
	}
	type snap struct {
		dir string
		mod time.Time
	}
	var found []snap
	for _, e := range ents {
		p := filepath.Join(snaps, e.Name(), "tokenizer.json")
		st, err := os.Stat(p)
		if err != nil || !st.Mode().IsRegular() {
			continue
		}
		mod := st.ModTime()
		if ds, err := os.Stat(filepath.Dir(p)); err == nil {
			mod = ds.ModTime()
		}
		found = append(found, snap{filepath.Dir(p), mod})
	}
	if len(found) == 0 {
		return "", where
	}
	// Newest first; ties by name, so the choice does not depend on the
	// directory's listing order.
	slices.SortFunc(found, func(a, b snap) int {
		return cmp.Or(b.mod.Compare(a.mod), strings.Compare(a.dir, b.dir))
	})
	return found[0].dir, where
}
