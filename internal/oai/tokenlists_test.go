package oai

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// sameParse fails t unless the token-list fast path and the general path
// agree on body: the same request or the same error.
func sameParse(t *testing.T, body []byte) {
	t.Helper()
	fast, ferr := parseCompletion(body, true)
	slow, serr := parseCompletion(body, false)
	if (ferr == nil) != (serr == nil) || (ferr != nil && ferr.Error() != serr.Error()) {
		t.Fatalf("%s:\nfast error %v\nslow error %v", body, ferr, serr)
	}
	if !reflect.DeepEqual(fast, slow) {
		t.Fatalf("%s:\nfast %+v\nslow %+v", body, fast, slow)
	}
}

func TestTokenListsMatchGeneralPath(t *testing.T) {
	for _, s := range []string{
		`{"model":"m","prompt":[1,2,3],"max_tokens":16,"stream":true}`,
		` { "prompt" : [ 1 , 2 ,3 ] , "n" : 1 } `,
		`{"prompt":[1,2],"prompt":"x"}`, `{"prompt":"x","prompt":[1,2]}`,
		`{"prompt":[1,2],"prompt":[3]}`, `{"PROMPT":[7,8]}`, `{"Prompt":[7],"prompt":[8]}`,
		`{"model":[1,2],"prompt":[3]}`, `{"max_tokens":[1,2],"prompt":[3]}`, `{"stream":[1],"prompt":[3]}`,
		`{"stream_options":[1],"prompt":[3]}`, `{"temperature":[1],"prompt":[3]}`,
		`{"extra":[4,5,6],"prompt":"text"}`, `{"extra":[4,5,6],"prompt":[1]}`, `{"extra":[4,5,6]}`,
		`{"prompt":[]}`, `{"prompt":[01,2]}`, `{"prompt":[1.0,2]}`, `{"prompt":[-1]}`, `{"prompt":[4294967296]}`,
		`{"prompt":[4294967295]}`, `{"prompt":[[1,2]]}`, `{"prompt":[1,,2]}`, `{"prompt":[1,2,]}`,
		`{"prompt":[1 2]}`, `{"prompt":"[1,2]"}`, `{"model":"a:[1,2]","prompt":[3]}`,
		`{"model":"a\"[1]","prompt":[3]}`, `{"model":"kvrouter-token-list-0","prompt":[3]}`,
		`{"prompt":"kvrouter-token-list-0","x":[3]}`, `{"prompt":"kvrouter\u002dtoken-list-0","x":[3]}`,
		`{[1,2]:3}`, `{"a":[1],[2]}`, `{"prompt":[1,2]`, `{"prompt":[1,2]}}`, `{"prompt":[1,2]} x`,
		`{"prompt":[1,2],}`, `{"o":{"p":[1,2]},"prompt":[3]}`, `{"stream_options":{"include_usage":true},"prompt":[9]}`,
		`{"prompt":[1,2],"max_tokens":0}`, `{"prompt":[1,2],"temperature":-1}`, `{"prompt":null,"x":[1]}`,
		`{"a":"[","prompt":[1]}`, `{"a":"]","prompt":[1]}`, `{"a":{"b":[1,2]},"prompt":[3]}`, `[1,2]`,
		`{"prompt":[1],"a":1,"b":[2],"c":[3],"d":[4]}`,
	} {
		sameParse(t, []byte(s))
	}
}

// Random bodies assembled from fragments that stress the list finder:
// lists in key, value and nested positions, strings holding brackets and
// colons, duplicate and case-folded keys, broken syntax.
func TestTokenListsRandomBodies(t *testing.T) {
	rng := rand.New(rand.NewPCG(16, 7))
	keys := []string{`"prompt"`, `"PROMPT"`, `"model"`, `"max_tokens"`, `"stream"`, `"n"`, `"x"`, `"stream_options"`, `"temperature"`, `"ignore_eos"`}
	vals := []string{`[1,2,3]`, `[ 4 , 5 ]`, `[]`, `[0]`, `[01]`, `[1.5]`, `[[1]]`, `"s"`, `"a:[1]"`, `"]"`, `16`, `0`, `true`,
		`null`, `{"include_usage":true}`, `{"a":[1]}`, `"kvrouter-token-list-1"`, `[4294967296]`, `[1,]`, `-2`}
	for range 20000 {
		var b strings.Builder
		b.WriteByte('{')
		for k := range rng.IntN(5) {
			if k > 0 {
				b.WriteByte(',')
			}
			switch rng.IntN(30) {
			case 0:
				b.WriteString(vals[rng.IntN(len(vals))]) // a value as key
			case 1: // a missing colon
				b.WriteString(keys[rng.IntN(len(keys))] + vals[rng.IntN(len(vals))])
			default:
				fmt.Fprintf(&b, "%s:%s", keys[rng.IntN(len(keys))], vals[rng.IntN(len(vals))])
			}
		}
		if rng.IntN(20) > 0 {
			b.WriteByte('}')
		}
		sameParse(t, []byte(b.String()))
	}
}

func FuzzTokenLists(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","prompt":[1,2,3],"max_tokens":3,"stream":true}`, `{"prompt":[1,2],"PROMPT":"x"}`,
		`{"model":[1],"prompt":[2]}`, `{"x":[1,2],"prompt":"kvrouter-token-list-0"}`, `{"a":":[1]","prompt":[2]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) { sameParse(t, body) })
}
