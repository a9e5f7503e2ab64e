package frontend

import (
	"fmt"

	"github.com/kvrouter/kvrouter/internal/oai"
)

// bodyFor is j's body as forwarded to worker id: a completion's text
// prompt replaced by the router's token ids when the pool's ForwardIDs(id), else the
// client's body (the engine tokenizes the text itself; the ids served the
// routing only).
func (s *Server) bodyFor(j *job, id uint64) []byte {
	if !j.textPrompt || len(j.tokens) == 0 || !s.pool.ForwardIDs(id) {
		return j.body
	}
	b, err := setPromptIDs(j.body, j.tokens)
	if err != nil {
		return j.body
	}
	return b
}

func setPromptIDs(body []byte, ids []uint32) ([]byte, error) {
	b, err := oai.SetFields(body, map[string]any{"prompt": ids})
	if err != nil {
		return nil, fmt.Errorf("frontend: forward token ids: %w", err)
	}
	return b, nil
}
