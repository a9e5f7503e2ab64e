package zmqguard

import (
	"bytes"
	"errors"
	"testing"

	"github.com/kvrouter/kvrouter/internal/eventplane/zmqguard/zmtptest"
)

func TestParserRefuses(t *testing.T) {
	lim := Limits{MaxMessageBytes: 1000, MaxFrames: 4}
	hello := zmtptest.Hello("PUB")
	msg := func(frames ...[]byte) []byte { return zmtptest.Message(frames...) }
	for _, tc := range []struct {
		name   string
		stream []byte
		reason string // "" = accepted
	}{
		{"kv message", msg([]byte("kv@10.0.0.1@m"), make([]byte, 8), make([]byte, 900)), ""},
		{"2^40 long frame", zmtptest.Header(0, 1<<40), ReasonFrame},
		{"above 2^48", zmtptest.Header(0, 1<<48+1), ReasonFrame},
		{"2^64-1", zmtptest.Header(0, 1<<64-1), ReasonFrame},
		{"frame at the limit", msg(make([]byte, 1000)), ""},
		{"frame over the limit", zmtptest.Header(0, 1001), ReasonFrame},
		{"message over the limit", msg(make([]byte, 600), make([]byte, 401)), ReasonMessage},
		{"next message starts afresh", append(msg(make([]byte, 600)), msg(make([]byte, 600))...), ""},
		{"frames at the limit", msg(nil, nil, nil, nil), ""},
		{"too many frames", msg(nil, nil, nil, nil, nil), ReasonFrames},
		{"long command", zmtptest.Header(0x4, MaxCommandBytes+1), ReasonCommand},
		{"reserved flag bit", []byte{0x8, 0}, ReasonMalformed},
		{"command inside a message", append(zmtptest.Header(0x1, 0), zmtptest.Command("PING", nil)...), ReasonMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := NewParser(lim)
			err := p.Feed(append(append([]byte(nil), hello...), tc.stream...))
			var de *DropError
			switch {
			case tc.reason == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.reason != "" && (!errors.As(err, &de) || de.Reason != tc.reason):
				t.Fatalf("err = %v; want reason %s", err, tc.reason)
			}
			if err != nil && p.Feed(msg(nil)) != err {
				t.Fatalf("the refusal is not sticky")
			}
		})
	}
}

func TestParserGreetingAndReady(t *testing.T) {
	ready := zmtptest.Command("READY", zmtptest.Property("Socket-Type", "PUB"))
	truncated := zmtptest.Command("READY", zmtptest.Property("Socket-Type", "PUB")[:12])
	badSig := zmtptest.Greeting()
	badSig[9] = 0
	v2 := zmtptest.Greeting()
	v2[10] = 2
	for _, tc := range []struct {
		name   string
		stream []byte
		ok     bool
	}{
		{"hello", append(zmtptest.Greeting(), ready...), true},
		{"bad signature", badSig, false},
		{"ZMTP 2", v2, false},
		// zmq4 v0.17 panics slicing this property (its accept goroutine).
		{"READY property truncated", append(zmtptest.Greeting(), truncated...), false},
		{"READY value beyond the frame", append(zmtptest.Greeting(),
			zmtptest.Command("READY", append([]byte{1, 'a'}, 0, 0, 1, 0))...), false},
		{"empty command", append(zmtptest.Greeting(), 0x4, 0), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := NewParser(Limits{})
			err := p.Feed(tc.stream)
			if (err == nil) != tc.ok {
				t.Fatalf("err = %v; want ok %v", err, tc.ok)
			}
			if tc.ok && p.HandshakeEnd() != int64(len(tc.stream)) {
				t.Fatalf("HandshakeEnd = %d; want %d", p.HandshakeEnd(), len(tc.stream))
			}
		})
	}
}

// A long frame's size (after its first byte) and body are held until the
// body is complete; short frames pass as they come.
func TestParserHeld(t *testing.T) {
	p := NewParser(Limits{})
	hello := zmtptest.Hello("PUB")
	if err := p.Feed(hello); err != nil || p.Held() != 0 {
		t.Fatalf("hello: err %v, held %d", err, p.Held())
	}
	long := zmtptest.Message(bytes.Repeat([]byte{7}, 300))
	steps := []struct {
		feed []byte
		held int64
	}{
		{long[:2], 0},     // flags and the size's first byte
		{long[2:5], 3},    // size bytes 1..3
		{long[5:100], 98}, // the rest of the size, part of the body
		{long[100:], 0},   // body complete
		{zmtptest.Message([]byte("short")), 0},
	}
	for i, s := range steps {
		if err := p.Feed(s.feed); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if p.Held() != s.held {
			t.Fatalf("step %d: held %d; want %d", i, p.Held(), s.held)
		}
	}
}
