package frontend

import (
	"github.com/kvrouter/kvrouter/internal/oai"
	"github.com/kvrouter/kvrouter/tokenizer"
)

// routingMessages are the messages a chat is routed on (DESIGN.md §1
// multimodal): the router cannot tokenize an image or audio part as the
// engine does (its placeholder tokens and mm hashes are the engine's), so
// it routes on the text before the first non-text part: the messages up to
// that one, whose content is cut at the part, without the generation
// prompt. The prompt's blocks before the part are exactly the engine's;
// the request is still forwarded whole. genPrompt reports whether the
// generation prompt belongs (no part was cut).
func routingMessages(in []oai.ChatMessageInput) (msgs []tokenizer.Message, genPrompt bool) {
	for i, m := range in {
		if m.NonText {
			return toMessages(in[:i+1]), false
		}
	}
	return toMessages(in), true
}
