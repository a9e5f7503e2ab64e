package main

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/kvrouter/kvrouter/internal/tokenizer/remote"
	"github.com/kvrouter/kvrouter/tokenizer"
)

// loadTokenizer resolves a --tokenizer value: "" or "builtin" is the
// tokenizer compiled into the binary; "remote" asks the workers' /tokenize
// (remoteURLs); anything else is a tokenizer.json file or a model directory.
func loadTokenizer(spec, model string, remoteURLs []string) (tokenizer.Tokenizer, error) {
	switch spec {
	case "", "builtin", "default":
		return tokenizer.Default(tokenizer.Options{})
	case "remote":
		if len(remoteURLs) == 0 {
			return nil, fmt.Errorf("--tokenizer remote needs worker URLs (--tokenizer-url or --worker)")
		}
		return remote.New(remote.Config{Endpoints: remoteURLs, Model: model,
			Client: &http.Client{Timeout: 30 * time.Second}})
	}
	return tokenizer.Load(spec, tokenizer.Options{})
}

// newLogger returns a text logger on stderr at the given level.
func newLogger(level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(strings.ToUpper(level))); err != nil {
		return nil, fmt.Errorf("--log-level %q: %w", level, err)
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: l})), nil
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
