package frontend

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/kvhash"
)

// TestRouteAndIndexGroups: a hybrid worker whose sliding-window group
// lost a block inside the prompt's last window is credited its joint
// match; /route explains it (full attention's overlap, each group's,
// the limiting group) and /debug/index counts each group's blocks. A
// fleet without hybrid workers answers without any groups field.
func TestRouteAndIndexGroups(t *testing.T) {
	s := newServerWith(t, false, nil)
	for id := uint64(1); id <= 2; id++ {
		if err := s.AddWorker(Worker{ID: id, URL: "http://127.0.0.1:1"}); err != nil {
			t.Fatal(err)
		}
	}
	B := s.Router().Config().BlockSize
	toks := make([]uint32, 5*B)
	ts := make([]string, len(toks))
	for i := range toks {
		toks[i] = uint32(1000 + i)
		ts[i] = fmt.Sprint(toks[i])
	}
	locals := kvhash.LocalHashes(toks, B, kvhash.Seed("", ""))
	seq := kvhash.SeqHashes(locals)
	var blocks []kvevents.Block
	for i := range locals {
		blocks = append(blocks, kvevents.Block{Hash: seq[i], Local: locals[i]})
	}
	body := `{"tokens":[` + strings.Join(ts, ",") + `]}`
	route := func(body string) (RouteResponse, string) {
		t.Helper()
		rec := do(t, s.Handler(), "POST", "/route", body)
		var rr RouteResponse
		if err := json.Unmarshal(rec.Body.Bytes(), &rr); err != nil || rec.Code != 200 {
			t.Fatalf("/route: %d %v %s", rec.Code, err, rec.Body)
		}
		return rr, rec.Body.String()
	}
	index := func() (IndexReport, string) {
		t.Helper()
		rec := do(t, s.Handler(), "GET", "/debug/index", "")
		var ix IndexReport
		if err := json.Unmarshal(rec.Body.Bytes(), &ix); err != nil || rec.Code != 200 {
			t.Fatalf("/debug/index: %d %v %s", rec.Code, err, rec.Body)
		}
		return ix, rec.Body.String()
	}
	for id := uint64(1); id <= 2; id++ {
		ev := kvevents.Event{WorkerID: id, EventID: 1, Kind: kvevents.KindStored, Blocks: blocks}
		if err := s.Apply(&ev); err != nil {
			t.Fatal(err)
		}
	}
	index() // flushes the writers
	// Another prompt: a routed one is predicted cached on its worker
	// (Config.Predict), which would mask the overlap below.
	if _, b := route(`{"tokens":[1,2,3]}`); strings.Contains(b, `"groups"`) {
		t.Fatalf("/route without hybrid workers names groups: %s", b)
	}
	if _, b := index(); strings.Contains(b, `"groups"`) {
		t.Fatalf("/debug/index without hybrid workers names groups: %s", b)
	}

	// Worker 1: a sliding window of 2B tokens (2 blocks), block 3 evicted
	// from it: a 5-block prefix lacks its window, 3 blocks keep theirs.
	g := kvevents.Group{Index: 1, Kind: kvevents.GroupSliding, Window: uint32(2 * B)}
	for _, ev := range []kvevents.Event{
		{WorkerID: 1, EventID: 2, Kind: kvevents.KindStored, Group: g, Blocks: blocks},
		{WorkerID: 1, EventID: 3, Kind: kvevents.KindRemoved, Group: kvevents.Group{Index: 1, Kind: kvevents.GroupSliding}, Hashes: []uint64{seq[3]}},
	} {
		if err := s.Apply(&ev); err != nil {
			t.Fatal(err)
		}
	}
	ix, b := index()
	for _, w := range ix.Workers {
		switch w.Worker {
		case 1:
			if w.Blocks["device"] != 5 || len(w.Groups) != 1 || w.Groups[0] != (GroupBlocks{Group: g.String(), Blocks: 4}) {
				t.Errorf("worker 1 in /debug/index: %+v\n%s", w, b)
			}
		case 2:
			if w.Groups != nil {
				t.Errorf("worker 2 in /debug/index has groups: %+v", w)
			}
		}
	}
	rr, b := route(body)
	if rr.Worker != 2 || rr.Groups != nil || rr.OverlapBlocks[0] != 5 {
		t.Fatalf("/route: want worker 2 with 5 blocks, no groups: %s", b)
	}
	for _, c := range rr.Candidates {
		switch c.Worker {
		case 1:
			want := GroupOverlap{Full: 5, Joint: 3, LimitedBy: g.String(), Groups: []GroupBlocks{{Group: g.String(), Blocks: 3}}}
			if c.Overlap[0] != 3 || c.Groups == nil || fmt.Sprint(*c.Groups) != fmt.Sprint(want) {
				t.Errorf("worker 1 candidate: overlap %v groups %+v, want 3 and %+v", c.Overlap, c.Groups, want)
			}
		case 2:
			if c.Groups != nil {
				t.Errorf("worker 2 candidate has groups: %+v", c.Groups)
			}
		}
	}
}
