package tokenizer

import (
	"strings"

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
	c := &codecCore{c: codec.NewCl100kBase()}
	for id := uint(0); id < 1024; id++ { // find DEL's byte token
		if s, err := c.c.Decode([]uint{id}); err == nil && s == "\x7f" {
			c.del = uint32(id)
			break
		}
	}
	l := newLocal(DefaultName, c, cl100kSpecial, nil, opts)
	t, err := NewChatTemplate(ChatMLTemplate, SpecialTokens{EOS: "<|im_end|>"})
	if err != nil {
		return nil, err
	}
	l.tmpl = t
	return l, nil
}

// codecCore adapts a tiktoken-go/tokenizer codec (which does not handle
// special tokens itself; [Local] splits them out first).
type codecCore struct {
	c   *codec.Codec
	del uint32 // id of the byte token "\x7f"
}

// appendOrdinary encodes text.
// NB: the codec's generated split regex (v0.10.0) drops U+007F (DEL)
// entirely, losing input; we encode each DEL as its own byte token instead
// (OpenAI's cl100k may merge DEL with adjacent punctuation, so ids around a
// DEL can differ from tiktoken's, but no input is lost).
func (c *codecCore) appendOrdinary(dst []uint32, text string) []uint32 {
	for {
		i := strings.IndexByte(text, 0x7f)
		if i < 0 {
			break
		}
		dst = c.encode(dst, text[:i])
		dst = append(dst, c.del)
		text = text[i+1:]
	}
	return c.encode(dst, text)
}

func (c *codecCore) encode(dst []uint32, text string) []uint32 {
	if text == "" {
		return dst
	}
	ids, _, err := c.c.Encode(text)
	if err != nil {
		// NB: only possible in the codec's strict UTF-8 mode, which is not
		// enabled; invalid UTF-8 is encoded as raw bytes.
		panic("tokenizer: cl100k encode: " + err.Error())
	}
	for _, id := range ids {
		dst = append(dst, uint32(id))
	}
	return dst
}

func (c *codecCore) tokenBytes(id uint32) ([]byte, bool) {
	s, err := c.c.Decode([]uint{uint(id)})
	if err != nil || s == "" {
		return nil, false
	}
	return []byte(s), true
}
