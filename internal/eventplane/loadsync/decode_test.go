package loadsync

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestDecodeBatchBounds(t *testing.T) {
	ok := `{"o":"a1","m":[{"k":1,"r":"r","w":3,"b":[1,2],"isl":128,"pt":64},{"k":4,"w":5,"s":"s","ttl":60000000000}]}`
	if b, err := decodeBatch([]byte(ok)); err != nil || len(b.Msgs) != 2 || b.Msgs[1].TTL != time.Minute {
		t.Fatalf("decodeBatch(valid) = %+v, %v", b, err)
	}
	bad := map[string]string{
		"too large":     `{"o":"a","m":[` + strings.Repeat(`{"k":5,"w":1},`, MaxBatchBytes/14) + `{"k":5}]}`,
		"no origin":     `{"m":[{"k":5}]}`,
		"long origin":   `{"o":"` + strings.Repeat("a", MaxOriginBytes+1) + `","m":[]}`,
		"unknown kind":  `{"o":"a","m":[{"k":9}]}`,
		"zero kind":     `{"o":"a","m":[{"w":1}]}`,
		"negative isl":  `{"o":"a","m":[{"k":1,"isl":-1}]}`,
		"negative ttl":  `{"o":"a","m":[{"k":4,"s":"s","ttl":-1}]}`,
		"long session":  `{"o":"a","m":[{"k":4,"s":"` + strings.Repeat("s", maxSessionBytes+1) + `"}]}`,
		"not json":      `{"o":`,
		"negative outb": `{"o":"a","m":[{"k":1,"ob":-5}]}`,
	}
	for name, in := range bad {
		if _, err := decodeBatch([]byte(in)); err == nil {
			t.Errorf("%s: decodeBatch accepted it", name)
		}
	}
}

// FuzzDecodeBatch: a received batch (anyone who may publish on the
// subject) never panics the decoder, and what it accepts is within the
// bounds and survives a round trip.
func FuzzDecodeBatch(f *testing.F) {
	seed, _ := json.Marshal(batch{Origin: "a", Msgs: []Message{
		{Kind: KindRoute, Request: "r", Worker: 1, Locals: []uint64{1, 2}, ISL: 32, PrefillTokens: 16, OutputBlocks: 2},
		{Kind: KindAffinity, Session: "s", Worker: 2, TTL: time.Second},
		{Kind: KindHeartbeat},
	}})
	f.Add(seed)
	f.Add([]byte(`{"o":"a","m":null}`))
	f.Add([]byte(`{"o":"a","m":[{"k":255,"isl":-1}]}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := decodeBatch(data)
		if err != nil {
			return
		}
		if b.Origin == "" || len(b.Origin) > MaxOriginBytes {
			t.Fatalf("accepted origin %q", b.Origin)
		}
		for _, m := range b.Msgs {
			if m.Kind < KindRoute || m.Kind > KindHeartbeat || m.ISL < 0 || m.TTL < 0 || len(m.Session) > maxSessionBytes {
				t.Fatalf("accepted %+v", m)
			}
		}
		again, err := json.Marshal(&b)
		if err != nil {
			t.Fatal(err)
		}
		b2, err := decodeBatch(again)
		if err != nil {
			t.Fatalf("re-encoded batch refused: %v", err)
		}
		if a, _ := json.Marshal(&b2); !bytes.Equal(a, again) {
			t.Fatalf("round trip changed it:\n%s\n%s", again, a)
		}
	})
}
