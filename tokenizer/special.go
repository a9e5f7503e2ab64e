package tokenizer

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// addedToken is an entry of tokenizer.json's added_tokens.
type addedToken struct {
	content    string
	id         uint32
	lstrip     bool // absorb whitespace on the left
	rstrip     bool // absorb whitespace on the right
	singleWord bool // match only as a whole word
}

// matcher finds added tokens in text the way HF does: leftmost match, and
// the longest one at that position.
type matcher struct {
	toks []addedToken
	// trie of the tokens' bytes: child of node n by byte b is
	// next[n<<8|b]; term[n] is the token ending at n (-1: none). Root: 0.
	// A text position costs one lookup per matched byte, however many
	// tokens share a prefix (Gemma 3 has 6245 "<unused…>" tokens).
	next      map[uint64]int32
	term      []int32
	firsts    string    // distinct first bytes
	isFirst   [256]bool // byte b starts some token
	byID      map[uint32]string
	byContent map[string]uint32
	maxLen    int // longest token, bytes
}

func newMatcher(toks []addedToken) *matcher {
	m := &matcher{byID: make(map[uint32]string, len(toks)), byContent: make(map[string]uint32, len(toks))}
	for _, t := range toks {
		if t.content == "" {
			continue
		}
		m.toks = append(m.toks, t)
		m.maxLen = max(m.maxLen, len(t.content))
		m.byID[t.id] = t.content
		m.byContent[t.content] = t.id
	}
	var firsts []byte
	m.next = make(map[uint64]int32)
	m.term = []int32{-1}
	for i, t := range m.toks {
		b := t.content[0]
		if !m.isFirst[b] {
			firsts = append(firsts, b)
			m.isFirst[b] = true
		}
		n := int32(0)
		for k := 0; k < len(t.content); k++ {
			key := uint64(n)<<8 | uint64(t.content[k])
			child, ok := m.next[key]
			if !ok {
				child = int32(len(m.term))
				m.next[key] = child
				m.term = append(m.term, -1)
			}
			n = child
		}
		if m.term[n] < 0 { // the first of equal contents wins
			m.term[n] = int32(i)
		}
	}
	m.firsts = string(firsts)
	return m
}

// match is one added token found in text.
type match struct {
	segEnd int    // end of the plain segment before the token (after lstrip)
	next   int    // where scanning resumes (after the token and rstrip)
	id     uint32 // the token's id
}

// find returns the first added token at or after from: the leftmost, and
// the longest there that its single_word condition allows.
func (m *matcher) find(text string, from int) (match, bool) {
	if len(m.toks) == 0 {
		return match{}, false
	}
	for i := from; i < len(text); {
		if len(m.firsts) == 1 {
			j := strings.IndexByte(text[i:], m.firsts[0])
			if j < 0 {
				return match{}, false
			}
			i += j
		} else {
			// NB: not strings.IndexAny, which reads firsts as UTF-8 and so
			// never finds a token that starts with a non-ASCII character.
			for i < len(text) && !m.isFirst[text[i]] {
				i++
			}
			if i == len(text) {
				return match{}, false
			}
		}
		var buf [16]int32
		cands := buf[:0] // tokens at i, shortest first
		for p, n := i, int32(0); p < len(text); p++ {
			child, ok := m.next[uint64(n)<<8|uint64(text[p])]
			if !ok {
				break
			}
			n = child
			if m.term[n] >= 0 {
				cands = append(cands, m.term[n])
			}
		}
		for c := len(cands) - 1; c >= 0; c-- { // longest first
			t := &m.toks[cands[c]]
			end := i + len(t.content)
			if t.singleWord && (isWordBefore(text, i) || isWordAfter(text, end)) {
				continue
			}
			start := i
			if t.lstrip {
				for start > from {
					r, n := utf8.DecodeLastRuneInString(text[from:start])
					if !unicode.IsSpace(r) {
						break
					}
					start -= n
				}
			}
			if t.rstrip {
				for end < len(text) {
					r, n := utf8.DecodeRuneInString(text[end:])
					if !unicode.IsSpace(r) {
						break
					}
					end += n
				}
			}
			return match{segEnd: start, next: end, id: t.id}, true
		}
		i++
	}
	return match{}, false
}

func isWordRune(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }

func isWordBefore(s string, i int) bool {
	if i == 0 {
		return false
	}
	r, _ := utf8.DecodeLastRuneInString(s[:i])
	return isWordRune(r)
}

func isWordAfter(s string, i int) bool {
	if i >= len(s) {
		return false
	}
	r, _ := utf8.DecodeRuneInString(s[i:])
	return isWordRune(r)
}
