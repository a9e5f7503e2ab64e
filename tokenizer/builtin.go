package tokenizer

import (
	"sync"

	"github.com/tiktoken-go/tokenizer/codec"
)

// DefaultName is the name of the built-in tokenizer.
const DefaultName = "cl100k_base"

// ChatMLTemplate is the built-in tokenizer's chat template (ChatML).
const ChatMLTemplate = `{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}`

// cl100kSpecial are cl100k_base's special tokens plus the ChatML markers
// OpenAI used with it (cl100k_im).
var cl100kSpecial = []addedToken{
	{content: "<|endoftext|>", id: 100257},
	{content: "<|fim_prefix|>", id: 100258},
	{content: "<|fim_middle|>", id: 100259},
	{content: "<|fim_suffix|>", id: 100260},
	{content: "<|im_start|>", id: 100264},
	{content: "<|im_end|>", id: 100265},
	{content: "<|endofprompt|>", id: 100276},
}

// Default returns the built-in tokenizer: OpenAI's cl100k_base encoding,
// compiled into the binary (github.com/tiktoken-go/tokenizer), with the
// ChatML chat template. It reads nothing from disk or network, so
// `kvrouter up` works offline; real deployments load the model's own
// tokenizer.json with [Load]. Encode adds no BOS (cl100k has none).
func Default(opts Options) (*Local, error) {
	l := newLocal(DefaultName, cl100kCore(), cl100kSpecial, nil, opts)
	t, err := NewChatTemplate(ChatMLTemplate, SpecialTokens{EOS: "<|im_end|>"})
	if err != nil {
		return nil, err
	}
	l.tmpl = t
	return l, nil
}

// cl100kCore returns the shared cl100k_base core: the codec's ranks behind
// the hand-written pre-tokenizer of its split regex, [cl100kPattern]. Built
// once per process (~100k tokens, ~10 ms); immutable afterwards.
//
// NB: this replaced the codec's own encoder, whose regex engine
// (dlclark/regexp2/v2) mis-splits the pattern: it drops U+007F and cuts
// " \n \n" into " \n", " \n" where \s*[\r\n]+ takes the whole run (as
// regexp2 v1, Oniguruma in HF tokenizers and tiktoken's fancy-regex do).
var cl100kCore = sync.OnceValue(func() *fastCore {
	return newFastCore(cl100kRanks(), splitterFor(cl100kPattern))
})

// cl100kRanks reads cl100k_base's ranks back from the codec (its vocabulary
// is unexported).
func cl100kRanks() map[string]int {
	cc := codec.NewCl100kBase()
	ranks := make(map[string]int, cl100kVocab)
	for id := range cl100kVocab {
		if s, err := cc.Decode([]uint{uint(id)}); err == nil && s != "" {
			ranks[s] = id
		}
	}
	return ranks
}

// cl100kVocab is the number of cl100k_base's ordinary tokens (ids below the
// first special token, <|endoftext|> = 100257).
const cl100kVocab = 100257
