package indexertest

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/kvrouter/kvrouter/indexer"
	"github.com/kvrouter/kvrouter/kvevents"
)

// GroupsDir is the directory of the group overlay's scripts
// (indexer/testdata/groups).
func GroupsDir() string { return filepath.Join(Dir(), "..", "groups") }

// RunGroups runs every script in GroupsDir against indexer.Groups over
// fresh inner indexes from inner (one per script; "init" sets the config).
func RunGroups(t *testing.T, inner func() indexer.Index) {
	t.Helper()
	datadriven.Walk(t, GroupsDir(), func(t *testing.T, path string) {
		h := &Harness{Inner: inner}
		h.init(indexer.GroupsConfig{})
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			return h.Run(t, d)
		})
	})
}

func (h *Harness) init(cfg indexer.GroupsConfig) {
	h.New = func() indexer.Index { return indexer.NewGroups(h.Inner(), cfg) }
	h.Index = h.New()
}

// runGroups runs the group overlay's commands (see doc.go).
func (h *Harness) runGroups(d *datadriven.TestData) (string, error) {
	switch d.Cmd {
	case "init":
		var cfg indexer.GroupsConfig
		if d.HasArg("block-size") {
			v, err := uintArg(d, "block-size", 10)
			if err != nil {
				return "", err
			}
			cfg.BlockSize = int(v)
		}
		if d.HasArg("max-pending") {
			v, err := uintArg(d, "max-pending", 10)
			if err != nil {
				return "", err
			}
			cfg.MaxPending = int(v)
		}
		cfg.FullOnly = d.HasArg("full-only")
		h.init(cfg)
		return "ok", nil
	case "explain":
		g, ok := h.Index.(*indexer.Groups)
		if !ok {
			return "", errors.New("explain needs a Groups index")
		}
		id, err := uintArg(d, "worker", 10)
		if err != nil {
			return "", err
		}
		locals, err := hexList(d, "locals")
		if err != nil {
			return "", err
		}
		m, ok := g.Explain(kvevents.Worker{ID: id}, locals)
		if !ok {
			return "not hybrid", nil
		}
		return FormatJoint(m), nil
	case "groups":
		g, ok := h.Index.(*indexer.Groups)
		if !ok {
			return "", errors.New("groups needs a Groups index")
		}
		var b strings.Builder
		for _, w := range g.HybridWorkers() {
			fmt.Fprintf(&b, "w%s:", w)
			for _, x := range g.WorkerGroups(w) {
				fmt.Fprintf(&b, " %s=%d", x.Name, x.Blocks)
			}
			b.WriteByte('\n')
		}
		if b.Len() == 0 {
			return "none", nil
		}
		return strings.TrimSuffix(b.String(), "\n"), nil
	}
	return "", fmt.Errorf("unknown command %q", d.Cmd)
}

// FormatJoint prints a JointMatch: "full=F joint=L limit=<group>|-" and one
// line per group's own figure.
func FormatJoint(m indexer.JointMatch) string {
	var b strings.Builder
	limit := "-"
	if m.Limit >= 0 {
		limit = m.Groups[m.Limit].Group.String()
	}
	fmt.Fprintf(&b, "full=%d joint=%d limit=%s", m.Full, m.Blocks, limit)
	for _, x := range m.Groups {
		fmt.Fprintf(&b, "\n  %s: %d", x.Group, x.Blocks)
	}
	return b.String()
}

// ParseGroup parses "INDEX:KIND[/WINDOW]", e.g. "1:sliding_window/8" or
// "2:mamba".
func ParseGroup(s string) (kvevents.Group, error) {
	i, rest, ok := strings.Cut(strings.TrimPrefix(s, "g"), ":")
	if !ok {
		return kvevents.Group{}, fmt.Errorf("group %q is not INDEX:KIND[/WINDOW]", s)
	}
	kind, win, _ := strings.Cut(rest, "/")
	idx, err := strconv.ParseUint(i, 10, 32)
	if err != nil {
		return kvevents.Group{}, fmt.Errorf("group %q: %w", s, err)
	}
	k, err := kvevents.ParseGroupKind(kind)
	if err != nil {
		return kvevents.Group{}, err
	}
	g := kvevents.Group{Index: uint32(idx), Kind: k}
	if win != "" {
		w, err := strconv.ParseUint(win, 10, 32)
		if err != nil {
			return kvevents.Group{}, fmt.Errorf("group %q: %w", s, err)
		}
		g.Window = uint32(w)
	}
	return g, nil
}
