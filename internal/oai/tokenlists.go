package oai

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
)

// tokenListMarker stands in for a token-id list in the body that
// decodeTokenLists hands to encoding/json.
const tokenListMarker = "kvrouter-token-list-"

// decodeTokenLists decodes a completion body whose prompt is a token-id
// list (`"prompt":[1,2,...]`) without making encoding/json scan the list
// twice (once to validate the body, once to skip to the list's end for
// Prompt.UnmarshalJSON), which took ~90% of ParseCompletion on a
// 256-token prompt. Each top-level "prompt" list (any letter case, as
// encoding/json matches keys) is parsed once by parseUintList and
// replaced by a marker string; the rest of the body, a few dozen bytes,
// goes through encoding/json as before.
//
// The result equals json.Unmarshal of the whole body into a
// CompletionRequest whenever ok is true: a list sits at a value position
// (after a key's colon), where a string is as valid as a list, so the
// edited body is valid exactly when the original is; only Prompt sees a
// marker and takes it as the list it replaced (bodies with a backslash,
// which could spell a marker or a key with escapes, or already holding a
// marker are left alone). ok is false on any decode error, so that the
// caller's general path reports the original body's error.
func decodeTokenLists(body []byte, out *CompletionRequest) (ok bool) {
	t := bytes.TrimSpace(body)
	if len(t) < 2 || t[0] != '{' || bytes.IndexByte(t, '\\') >= 0 || bytes.Contains(t, []byte(tokenListMarker)) {
		return false
	}
	type span struct {
		start, end int
		toks       []uint32
	}
	var buf [2]span
	lists := buf[:0]
	depth, inStr, last := 0, false, byte(0) // last: the last byte outside strings and whitespace
	str, key := [2]int{}, [2]int{}          // the last string's span; the last key's (a string before a colon)
	for i := 0; i < len(t); i++ {
		c := t[i]
		if inStr {
			if c == '"' {
				inStr, last = false, '"'
				str[1] = i
			}
			continue
		}
		switch c {
		case '"':
			inStr = true
			str[0] = i + 1
		case ' ', '\t', '\n', '\r':
		case ':':
			key, last = str, c
		case '[':
			if depth == 1 && last == ':' && bytes.EqualFold(t[key[0]:key[1]], []byte("prompt")) {
				j := i + 1
				for j < len(t) && (t[j] >= '0' && t[j] <= '9' || t[j] == ',' || t[j] == ' ' || t[j] == '\t' || t[j] == '\n' || t[j] == '\r') {
					j++
				}
				if j < len(t) && t[j] == ']' {
					if toks, ok := parseUintList(t[i : j+1]); ok && len(toks) > 0 {
						lists = append(lists, span{i, j + 1, toks})
						i, last = j, ']'
						continue
					}
				}
			}
			depth++
			last = c
		case '{':
			depth++
			last = c
		case ']', '}':
			depth--
			last = c
		default:
			last = c
		}
	}
	if len(lists) == 0 {
		return false
	}
	edited := make([]byte, 0, 64+len(lists)*(len(tokenListMarker)+8))
	prev := 0
	for k, l := range lists {
		edited = append(edited, t[prev:l.start]...)
		edited = append(edited, '"')
		edited = append(edited, tokenListMarker...)
		edited = strconv.AppendInt(edited, int64(k), 10)
		edited = append(edited, '"')
		prev = l.end
	}
	edited = append(edited, t[prev:]...)
	var r CompletionRequest
	if json.Unmarshal(edited, &r) != nil {
		return false
	}
	if m, found := strings.CutPrefix(r.Prompt.Text, tokenListMarker); found && !r.Prompt.IsTokens {
		k, err := strconv.Atoi(m)
		if err != nil || k < 0 || k >= len(lists) {
			return false
		}
		r.Prompt = Prompt{Tokens: lists[k].toks, IsTokens: true}
	}
	*out = r
	return true
}
