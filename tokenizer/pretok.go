package tokenizer

import (
	"unicode"
	"unicode/utf8"
)

// Hand-written pre-tokenizers for the split regexes of the GPT-2 and
// cl100k/Llama 3/Qwen family. The backtracking regex (dlclark/regexp2) took
// ~85% of uncached encoding time; these scanners return the same pieces in
// one forward pass (FuzzPretokenize and TestPretokenizeTable check them
// against the regex on the same engine). A pattern not listed in
// [splitterFor] keeps the regex.
//
// The regexes are evaluated by a backtracking engine that tries the
// alternatives in order at each position, over runes (invalid UTF-8 bytes
// become U+FFFD first; see validUTF8). Classes are Go's unicode tables,
// which regexp2 uses too: \s = unicode.IsSpace, \p{L} = unicode.IsLetter,
// \p{N} = unicode.IsNumber.

// cl100kPattern is the split regex of cl100k_base, Llama 3 (\p{N}{1,3}) and,
// with qwenPattern's single \p{N}, Qwen 2/2.5/3.
const (
	cl100kPattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	qwenPattern   = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

// splitter returns the end of the piece that starts at i (i < len(s));
// s must be valid UTF-8.
type splitter func(s string, i int) int

// splitterFor returns the hand-written scanner equal to pattern, or nil when
// there is none (the caller then keeps the regex).
func splitterFor(pattern string) splitter {
	switch pattern {
	case cl100kPattern:
		return func(s string, i int) int { return nextCl100k(s, i, 3) }
	case qwenPattern:
		return func(s string, i int) int { return nextCl100k(s, i, 1) }
	case gpt2Pattern:
		return nextGPT2
	}
	return nil
}

// Character classes of the split regexes. clOther is [^\s\p{L}\p{N}].
const (
	clOther uint8 = iota
	clLetter
	clNumber
	clSpace   // \s except \r and \n
	clNewline // \r or \n
)

// asciiClass classifies the ASCII runes, the common case, without the
// unicode range tables.
var asciiClass = func() (t [utf8.RuneSelf]uint8) {
	for r := rune(0); r < utf8.RuneSelf; r++ {
		t[r] = classOfRune(r)
	}
	return t
}()

func classOfRune(r rune) uint8 {
	switch {
	case r == '\r' || r == '\n':
		return clNewline
	case unicode.IsSpace(r):
		return clSpace
	case unicode.IsLetter(r):
		return clLetter
	case unicode.IsNumber(r):
		return clNumber
	}
	return clOther
}

// classAt returns the class of the rune at s[i] and its width.
func classAt(s string, i int) (uint8, int) {
	if c := s[i]; c < utf8.RuneSelf {
		return asciiClass[c], 1
	}
	r, n := utf8.DecodeRuneInString(s[i:])
	return classOfRune(r), n
}

// runOf returns the end of the run of class c starting at i.
func runOf(s string, i int, c uint8) int {
	for i < len(s) {
		if b := s[i]; b < utf8.RuneSelf {
			if asciiClass[b] != c {
				return i
			}
			i++
			continue
		}
		cc, n := classAt(s, i)
		if cc != c {
			return i
		}
		i += n
	}
	return i
}

// contraction returns the length of the contraction ('s 't 're 've 'm 'll
// 'd) at s[i], or 0. fold makes it ASCII case-insensitive, as (?i:...) is
// for these letters (no other rune folds to them).
func contraction(s string, i int, fold bool) int {
	if s[i] != '\'' || i+1 >= len(s) {
		return 0
	}
	var m byte
	if fold {
		m = 0x20 // ASCII letters differ from their capitals in this bit only
	}
	switch s[i+1] | m {
	case 's', 't', 'm', 'd':
		return 2
	case 'r', 'v':
		if i+2 < len(s) && s[i+2]|m == 'e' {
			return 3
		}
	case 'l':
		if i+2 < len(s) && s[i+2]|m == 'l' {
			return 3
		}
	}
	return 0
}

// nextCl100k scans one piece of cl100kPattern (digits = 3) or qwenPattern
// (digits = 1), trying the alternatives in the regex's order.
func nextCl100k(s string, i, digits int) int {
	if n := contraction(s, i, true); n > 0 {
		return i + n
	}
	c0, n0 := classAt(s, i)
	switch c0 {
	case clLetter: // [^\r\n\p{L}\p{N}]?\p{L}+ with the optional part empty
		return runOf(s, i+n0, clLetter)
	case clNumber: // \p{N}{1,digits}
		j := i + n0
		for k := 1; k < digits && j < len(s); k++ {
			c, n := classAt(s, j)
			if c != clNumber {
				break
			}
			j += n
		}
		return j
	case clOther, clSpace:
		j := i + n0
		if j < len(s) {
			c1, n1 := classAt(s, j)
			if c1 == clLetter { // [^\r\n\p{L}\p{N}]\p{L}+
				return runOf(s, j+n1, clLetter)
			}
			if c0 == clSpace && s[i] == ' ' && c1 == clOther { // ' '[^\s\p{L}\p{N}]+[\r\n]*
				return runOf(s, runOf(s, j+n1, clOther), clNewline)
			}
		}
		if c0 == clOther { // [^\s\p{L}\p{N}]+[\r\n]*
			return runOf(s, runOf(s, j, clOther), clNewline)
		}
	}
	return whitespace(s, i, true)
}

// whitespace scans the whitespace alternatives at a rune of \s:
// \s*[\r\n]+ (when newlines), then \s+(?!\S), then \s+.
func whitespace(s string, i int, newlines bool) int {
	j, last, nl := i, i, -1
	for j < len(s) {
		c, n := classAt(s, j)
		if c != clSpace && c != clNewline {
			break
		}
		if c == clNewline {
			nl = j
		}
		last = j
		j += n
	}
	if newlines && nl >= 0 {
		// \s* backtracks to the last newline of the run; [\r\n]+ takes it
		// (and nothing after it, which is not a newline or not \s).
		return nl + 1
	}
	if j == len(s) || last == i {
		return j // \s+ at the end of the text, or a single rune: \s+
	}
	return last // \s+(?!\S): give the last rune back to precede the \S
}

// nextGPT2 scans one piece of gpt2Pattern.
func nextGPT2(s string, i int) int {
	if n := contraction(s, i, false); n > 0 {
		return i + n
	}
	c0, n0 := classAt(s, i)
	if c0 == clSpace && s[i] == ' ' && i+1 < len(s) {
		if c1, n1 := classAt(s, i+1); c1 == clLetter || c1 == clNumber || c1 == clOther {
			return runOf(s, i+1+n1, c1) // ' ?\p{L}+', ' ?\p{N}+', ' ?[^\s\p{L}\p{N}]+'
		}
	}
	if c0 == clLetter || c0 == clNumber || c0 == clOther {
		return runOf(s, i+n0, c0)
	}
	return whitespace(s, i, false)
}

// validUTF8 returns s with every invalid byte replaced by U+FFFD, as the
// regex engine sees it (it converts the text to runes).
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	b := make([]byte, 0, len(s)+8)
	for _, r := range s {
		b = utf8.AppendRune(b, r)
	}
	return string(b)
}
