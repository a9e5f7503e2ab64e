package progress

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// A writer that is not a terminal (a log, a buffer) gets one plain line
// per quarter: no carriage returns, no escape sequences.
func TestLinesWhenNotATerminal(t *testing.T) {
	var buf bytes.Buffer
	b := New(&buf, 10, "replay kv")
	for range 10 {
		b.Add(1)
	}
	b.Finish()
	want := "replay kv: 3/10 (25%)\nreplay kv: 5/10 (50%)\nreplay kv: 8/10 (75%)\nreplay kv: 10/10 (100%)\n"
	if buf.String() != want {
		t.Errorf("got %q, want %q", buf.String(), want)
	}
	buf.Reset()
	f := Func(&buf, "synth load 50%")
	for _, d := range []int64{0, 40, 99, 100} {
		f(d, 100)
	}
	if want := "synth load 50%: 40/100 (25%)\nsynth load 50%: 99/100 (75%)\nsynth load 50%: 100/100 (100%)\n"; buf.String() != want {
		t.Errorf("Func: got %q, want %q", buf.String(), want)
	}
	var nilBar *Bar
	nilBar.Add(1)
	nilBar.Finish()
	if New(nil, 5, "x") != nil {
		t.Error("New(nil) is a bar")
	}
}

func TestIsTerminal(t *testing.T) {
	if IsTerminal(&bytes.Buffer{}) {
		t.Error("a buffer is a terminal")
	}
	f, err := os.CreateTemp(t.TempDir(), "log")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if IsTerminal(f) {
		t.Error("a regular file is a terminal")
	}
	b := New(f, 4, "x")
	b.Set(4)
	b.Finish()
	data, _ := os.ReadFile(f.Name())
	if strings.ContainsAny(string(data), "\r\x1b") {
		t.Errorf("file got terminal control characters: %q", data)
	}
}
