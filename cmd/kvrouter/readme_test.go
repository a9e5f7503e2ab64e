package main

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestREADMEFlagsAndDefaults: the flags README.md and the docs/ pages name
// for up, serve and mocker (README.md, docs/engines.md, docs/operations.md,
// docs/study-tools.md) exist, with the defaults they state ("" = any
// default); replay's and bench frontend's are checked in cmd/kvrouter-study.
func TestREADMEFlagsAndDefaults(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cmd   func() *cobra.Command
		flags map[string]string
	}{
		{"up", newUpCmd, map[string]string{"workers": "4", "port": "8080", "host": "127.0.0.1", "policy": "kv",
			"speedup-ratio": "", "api-key": "", "index": "flash", "block-size": "64", "disagg": "", "disagg-policy": "always",
			"kv-transfer-bandwidth": "2.5e+10", "kv-transfer-latency": "1ms"}},
		{"serve", newServeCmd, map[string]string{"nats": "", "tokenizer": "auto", "block-size": "64", "no-nats": "false",
			"worker": "", "forward-tokens": "true", "session-affinity": "false", "queue-threshold": "0",
			"api-key": "", "admin-key": "", "max-body-bytes": "", "max-prompt-tokens": "", "retries": "2",
			"busy-kv-usage": "0", "busy-prefill-tokens": "0", "load-poll": "250ms", "index": "flash", "jump-stride": "64",
			"index-writers": strconv.Itoa(runtime.GOMAXPROCS(0)), "embedded-nats-port": "4222", "policy": "kv",
			"model": "kvrouter-mock", "disagg-policy": "isl", "disagg-isl-threshold": "8192", "prefill-timeout": "1m0s",
			"worker-max-num-seqs": "0", "worker-max-batched-tokens": "8192", "zmq-max-message-bytes": "16777216", "zmq-hold-max-bytes": "67108864",
			"addr": "0.0.0.0:8080", "drain-timeout": "30s", "metrics-auth": "false", "zmq-bind": "", "lora-adapter": "",
			"snapshot-interval": "1m0s", "stream-max-age": "1h0m0s", "stream-max-bytes": "1073741824", "print-config": "false"}},
		{"mocker", newMockerCmd, map[string]string{"addr": "", "worker-id": "", "nats": "", "zmq-pub": "", "zmq-replay": "",
			"speedup-ratio": "", "block-size": "64", "model": "kvrouter-mock", "role": ""}},
	} {
		c := tc.cmd()
		for name, def := range tc.flags {
			f := c.Flags().Lookup(name)
			if f == nil {
				t.Errorf("%s has no --%s", tc.name, name)
				continue
			}
			if def != "" && f.DefValue != def {
				t.Errorf("%s --%s defaults to %q, README says %q", tc.name, name, f.DefValue, def)
			}
		}
	}
}

// TestDocCommandsParse: every command line for this binary in a fenced
// block of README.md or a docs/ page (kvrouter up, serve, mocker, bridge,
// hash, events ...) names a real subcommand and parses with its flags, so
// the commands a user copies from the docs are accepted. --help and
// --help-all are left to the help tests.
func TestDocCommandsParse(t *testing.T) {
	files := []string{filepath.Join("..", "..", "README.md")}
	err := filepath.WalkDir(filepath.Join("..", "..", "docs"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// "kvrouter up", "./cmd/kvrouter serve", not "kvrouter-epp" or prose.
	cmdRE := regexp.MustCompile(`(?:^|[\s/])kvrouter ((?:up|serve|mocker|bridge|hash|events)\b.*)$`)
	checked := 0
	for _, path := range files {
		for _, line := range fencedCommandLines(t, path) {
			m := cmdRE.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			args := shellWords(m[1])
			var keep []string
			for _, a := range args {
				if a == "--help" || a == "--help-all" {
					continue
				}
				keep = append(keep, a)
			}
			root := newRootCmd()
			sub, rest, err := root.Find(keep)
			if err != nil || sub == root {
				t.Errorf("%s: %q: no such command (%v)", path, line, err)
				continue
			}
			if err := sub.ParseFlags(rest); err != nil {
				t.Errorf("%s: %q: %v", path, line, err)
			}
			checked++
		}
	}
	if checked < 5 {
		t.Fatalf("checked %d command lines; the docs' examples moved?", checked)
	}
}

// fencedCommandLines returns the lines inside ``` blocks of a Markdown
// file, continuation lines (ending in a backslash) joined.
func fencedCommandLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	in, cur := false, ""
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			in = !in
			continue
		}
		if !in {
			continue
		}
		if s, ok := strings.CutSuffix(strings.TrimRight(line, " "), "\\"); ok {
			cur += s + " "
			continue
		}
		out = append(out, cur+line)
		cur = ""
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// shellWords splits a shell command line into words: single and double
// quotes group, and a comment, redirection or pipe ends the command.
func shellWords(line string) []string {
	var words []string
	var w strings.Builder
	inWord := false
	var quote byte
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			} else {
				w.WriteByte(c)
			}
		case c == '\'' || c == '"':
			quote, inWord = c, true
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		case !inWord && (c == '#' || c == '>' || c == '|' || c == ';' || c == '&'):
			return words
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words
}
