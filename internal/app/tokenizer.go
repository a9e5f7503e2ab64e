package app

import (
	"fmt"
	"net/http"
	"time"

	"github.com/kvrouter/kvrouter/internal/tokenizer/remote"
	"github.com/kvrouter/kvrouter/tokenizer"
)

// LoadTokenizer resolves a tokenizer spec: "" or "builtin" is the
// tokenizer compiled into the binary; "remote" asks the workers' /tokenize
// (remoteURLs); anything else is a tokenizer.json file or a model
// directory.
func LoadTokenizer(spec, model string, remoteURLs []string) (tokenizer.Tokenizer, error) {
	switch spec {
	case "", "builtin", "default":
		return tokenizer.Default(tokenizer.Options{})
	case "remote":
		if len(remoteURLs) == 0 {
			return nil, fmt.Errorf("tokenizer remote needs worker URLs (--tokenizer-url or --worker)")
		}
		return remote.New(remote.Config{Endpoints: remoteURLs, Model: model,
			Client: &http.Client{Timeout: 30 * time.Second}})
	}
	return tokenizer.Load(spec, tokenizer.Options{})
}
