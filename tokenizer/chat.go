package tokenizer

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nikolalohinski/gonja/v2/builtins"
	"github.com/nikolalohinski/gonja/v2/config"
	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/loaders"
)

// ChatTemplate is a compiled Jinja chat template (tokenizer_config.json's
// chat_template), rendered like HF transformers' apply_chat_template: a
// Jinja environment with trim_blocks and lstrip_blocks, the globals
// raise_exception and strftime_now, and the variables messages,
// add_generation_prompt, bos_token, eos_token (plus unk_token/pad_token when
// set). It is rendered with gonja, which covers the Jinja2 subset chat
// templates use, including Python string methods (startswith, split, strip);
// a template gonja cannot parse is an error at construction, never a silent
// mis-render at request time. Safe for concurrent use.
type ChatTemplate struct {
	src  string
	tpl  *exec.Template
	vars map[string]any // special-token variables
	now  func() time.Time
}

// SpecialTokens are the template variables taken from tokenizer_config.json.
// An empty field is passed to the template as an empty string.
type SpecialTokens struct {
	BOS, EOS, UNK, PAD string
}

// errRaised carries the message of a template's raise_exception call.
type errRaised struct{ msg string }

func (e *errRaised) Error() string { return "raise_exception: " + e.msg }

// NewChatTemplate compiles a chat template. It wraps [ErrTemplate] when the
// source does not parse.
func NewChatTemplate(source string, tokens SpecialTokens) (*ChatTemplate, error) {
	cfg := config.New()
	cfg.TrimBlocks = true      // as HF: ImmutableSandboxedEnvironment(trim_blocks=True,
	cfg.LeftStripBlocks = true // lstrip_blocks=True)
	ct := &ChatTemplate{src: source, now: time.Now, vars: map[string]any{
		"bos_token": tokens.BOS,
		"eos_token": tokens.EOS,
	}}
	if tokens.UNK != "" {
		ct.vars["unk_token"] = tokens.UNK
	}
	if tokens.PAD != "" {
		ct.vars["pad_token"] = tokens.PAD
	}
	globals := exec.NewContext(map[string]any{
		"raise_exception": func(msg string) (string, error) { return "", &errRaised{msg: msg} },
		inlineIfFunc: func(cond, a, b *exec.Value) *exec.Value {
			if cond.IsTrue() {
				return a
			}
			return b
		},
		"strftime_now": func(format string) string { return strftime(ct.now(), format) },
	})
	env := &exec.Environment{
		Context:           exec.EmptyContext().Update(builtins.GlobalFunctions).Update(builtins.GlobalVariables).Update(globals),
		Filters:           builtins.Filters,
		Tests:             builtins.Tests,
		ControlStructures: builtins.ControlStructures,
		Methods:           builtins.Methods,
	}
	loader, err := loaders.NewFileSystemLoader("")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrTemplate, err)
	}
	const root = "chat_template"
	shifted, err := loaders.NewShiftedLoader(root, strings.NewReader(rewriteInlineIf(source)), loader)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrTemplate, err)
	}
	tpl, err := newTemplateSafe(root, cfg, shifted, env)
	if err != nil {
		return nil, fmt.Errorf("%w: parse: %v", ErrTemplate, shorten(err))
	}
	ct.tpl = tpl
	return ct, nil
}

// inlineIfFunc is the global that stands in for a conditional expression
// in parentheses, which gonja cannot parse (Gemma 3's template has
// "(first_user_prefix if loop.first else \"\")").
const inlineIfFunc = "__kvrouter_inline_if"

// rewriteInlineIf rewrites every parenthesized "(A if C else B)" inside the
// template's {{ }} and {% %} tags into inlineIfFunc((C), (A), (B)).
// NB: unlike Jinja, both A and B are evaluated; chat templates use this
// form for plain values.
func rewriteInlineIf(src string) string {
	if !strings.Contains(src, " else ") {
		return src
	}
	var b strings.Builder
	for {
		i := strings.Index(src, "{{")
		if j := strings.Index(src, "{%"); j >= 0 && (i < 0 || j < i) {
			i = j
		}
		if i < 0 {
			b.WriteString(src)
			return b.String()
		}
		closer := "}}"
		if src[i+1] == '%' {
			closer = "%}"
		}
		end := tagEnd(src, i+2, closer)
		if end < 0 {
			b.WriteString(src)
			return b.String()
		}
		b.WriteString(src[:i+2])
		b.WriteString(rewriteExpr(src[i+2 : end]))
		src = src[end:]
	}
}

// tagEnd finds closer after from, skipping string literals; -1: none.
func tagEnd(s string, from int, closer string) int {
	for i := from; i < len(s); i++ {
		switch {
		case s[i] == '\'' || s[i] == '"':
			i = stringEnd(s, i)
		case strings.HasPrefix(s[i:], closer):
			return i
		}
	}
	return -1
}

// stringEnd returns the index of the quote closing the literal at i.
func stringEnd(s string, i int) int {
	q := s[i]
	for i++; i < len(s); i++ {
		if s[i] == '\\' {
			i++
		} else if s[i] == q {
			return i
		}
	}
	return len(s)
}

// rewriteExpr rewrites the grouping parentheses of one tag's expression.
func rewriteExpr(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\'' || c == '"' {
			j := min(stringEnd(s, i), len(s)-1)
			b.WriteString(s[i : j+1])
			i = j
			continue
		}
		if c != '(' || isCallee(s[:i]) {
			b.WriteByte(c)
			continue
		}
		j := closeParen(s, i)
		if j < 0 {
			b.WriteString(s[i:])
			break
		}
		inner := rewriteExpr(s[i+1 : j])
		if a, cond, alt, ok := splitInlineIf(inner); ok {
			fmt.Fprintf(&b, "%s((%s), (%s), (%s))", inlineIfFunc, cond, a, alt)
		} else {
			b.WriteString("(" + inner + ")")
		}
		i = j
	}
	return b.String()
}

// isCallee reports whether a "(" after prefix is a call or a subscript's
// (an identifier, ")" or "]" before it), not a grouping.
func isCallee(prefix string) bool {
	p := strings.TrimRight(prefix, " \t\n")
	if p == "" {
		return false
	}
	c := p[len(p)-1]
	if c == ')' || c == ']' || c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') {
		// A keyword (e.g. "and (", "in (") is an operator, not a callee.
		k := len(p)
		for k > 0 && (p[k-1] == '_' || (p[k-1] >= 'a' && p[k-1] <= 'z') || (p[k-1] >= 'A' && p[k-1] <= 'Z') || (p[k-1] >= '0' && p[k-1] <= '9')) {
			k--
		}
		switch p[k:] {
		case "and", "or", "not", "in", "is", "if", "else", "return":
			return false
		}
		return true
	}
	return false
}

// closeParen returns the index of the ")" matching the "(" at i; -1: none.
func closeParen(s string, i int) int {
	depth := 0
	for ; i < len(s); i++ {
		switch s[i] {
		case '\'', '"':
			i = stringEnd(s, i)
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

// splitInlineIf splits "A if C else B" at its top-level keywords.
func splitInlineIf(s string) (a, cond, alt string, ok bool) {
	ifAt, elseAt, depth := -1, -1, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\'' || c == '"':
			i = stringEnd(s, i)
		case c == '(' || c == '[' || c == '{':
			depth++
		case c == ')' || c == ']' || c == '}':
			depth--
		case depth == 0 && ifAt < 0 && isKeywordAt(s, i, "if"):
			ifAt = i
		case depth == 0 && ifAt >= 0 && elseAt < 0 && isKeywordAt(s, i, "else"):
			elseAt = i
		}
	}
	if ifAt <= 0 || elseAt < 0 {
		return "", "", "", false
	}
	return s[:ifAt], s[ifAt+2 : elseAt], s[elseAt+4:], true
}

// isKeywordAt reports whether the word kw stands alone at s[i:].
func isKeywordAt(s string, i int, kw string) bool {
	if !strings.HasPrefix(s[i:], kw) {
		return false
	}
	word := func(c byte) bool {
		return c == '_' || c == '.' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
	}
	return (i == 0 || !word(s[i-1])) && (i+len(kw) == len(s) || !word(s[i+len(kw)]))
}

// newTemplateSafe guards against panics inside the third-party parser on
// hostile templates (a bad template must be an error, not a crash).
func newTemplateSafe(id string, cfg *config.Config, l loaders.Loader, env *exec.Environment) (t *exec.Template, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("parser panic: %v", r)
		}
	}()
	return exec.NewTemplate(id, cfg, l, env)
}

// Source returns the template text.
func (ct *ChatTemplate) Source() string { return ct.src }

// Render renders the conversation. It wraps [ErrTemplate] on failure,
// including a raise_exception call (e.g. roles out of order).
func (ct *ChatTemplate) Render(msgs []Message, addGenerationPrompt bool) (out string, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = "", fmt.Errorf("%w: render panic: %v", ErrTemplate, r)
		}
	}()
	list := make([]any, len(msgs))
	for i, m := range msgs {
		mm := map[string]any{"role": m.Role, "content": m.Content}
		if m.Name != "" {
			mm["name"] = m.Name
		}
		list[i] = mm
	}
	data := make(map[string]any, len(ct.vars)+2)
	for k, v := range ct.vars {
		data[k] = v
	}
	data["messages"] = list
	data["add_generation_prompt"] = addGenerationPrompt
	s, err := ct.tpl.ExecuteToString(exec.NewContext(data))
	if err != nil {
		var raised *errRaised
		if errors.As(err, &raised) {
			return "", fmt.Errorf("%w: %s", ErrTemplate, raised.Error())
		}
		return "", fmt.Errorf("%w: render: %v", ErrTemplate, shorten(err))
	}
	return s, nil
}

// shorten trims third-party errors that embed the whole template source.
func shorten(err error) string {
	s := err.Error()
	if len(s) > 400 {
		s = s[:200] + " ... " + s[len(s)-150:]
	}
	return s
}

// strftime implements the common C strftime directives used by chat
// templates (e.g. Llama 3.1's "%d %b %Y").
func strftime(t time.Time, f string) string {
	var b strings.Builder
	for i := 0; i < len(f); i++ {
		if f[i] != '%' || i+1 == len(f) {
			b.WriteByte(f[i])
			continue
		}
		i++
		switch f[i] {
		case 'Y':
			fmt.Fprintf(&b, "%04d", t.Year())
		case 'y':
			fmt.Fprintf(&b, "%02d", t.Year()%100)
		case 'm':
			fmt.Fprintf(&b, "%02d", int(t.Month()))
		case 'd':
			fmt.Fprintf(&b, "%02d", t.Day())
		case 'H':
			fmt.Fprintf(&b, "%02d", t.Hour())
		case 'M':
			fmt.Fprintf(&b, "%02d", t.Minute())
		case 'S':
			fmt.Fprintf(&b, "%02d", t.Second())
		case 'b':
			b.WriteString(t.Format("Jan"))
		case 'B':
			b.WriteString(t.Format("January"))
		case 'a':
			b.WriteString(t.Format("Mon"))
		case 'A':
			b.WriteString(t.Format("Monday"))
		case 'j':
			fmt.Fprintf(&b, "%03d", t.YearDay())
		case '%':
			b.WriteByte('%')
		default:
			b.WriteByte('%')
			b.WriteByte(f[i])
		}
	}
	return b.String()
}
