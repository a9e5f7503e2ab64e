package frontend

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/kvrouter/kvrouter/router"
)

// placementServer has client key "client", admin key "admin", and two
// recording workers: 1 (zone=a, two DP ranks) and 2 (zone=b), routed
// round-robin so that only a constraint keeps requests on one worker.
func placementServer(t *testing.T) (*Server, map[uint64]*recWorker) {
	t.Helper()
	s := newServerWith(t, false, func(c *Config) {
		c.Router.Policy = router.PolicyRoundRobin
		c.APIKeys, c.AdminKeys = []string{"client"}, []string{"admin"}
	})
	ws := map[uint64]*recWorker{}
	for id, zone := range map[uint64]string{1: "a", 2: "b"} {
		ws[id] = newRecWorker(t, id, 0)
		info := router.WorkerInfo{Labels: map[string]string{"zone": zone}, DPSize: 1}
		if id == 1 {
			info.DPSize = 2
		}
		if err := s.AddWorker(Worker{ID: id, URL: ws[id].URL, Info: info}); err != nil {
			t.Fatal(err)
		}
	}
	return s, ws
}

func doPlaced(t *testing.T, s *Server, path, key, body string, hdr map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest("POST", path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	return rec
}

// TestPlacementHeadersProxy: on the OpenAI path, the placement headers
// hold every request to the admitted workers; without the admin key they
// are refused (403); malformed, 400; unsatisfiable, 503 (never another
// worker).
func TestPlacementHeadersProxy(t *testing.T) {
	s, _ := placementServer(t)
	const body = `{"prompt":"hello there","max_tokens":1}`
	for _, c := range []struct {
		name, key string
		hdr       map[string]string
		code      int
		worker    string // every answer's HeaderWorker
	}{
		{"pin", "admin", map[string]string{HeaderPinWorker: "2"}, 200, "2"},
		{"pin rank", "admin", map[string]string{HeaderPinWorker: "1:1"}, 200, "1"},
		{"labels", "admin", map[string]string{HeaderRequireLabels: "zone=a"}, 200, "1"},
		{"ranks", "admin", map[string]string{HeaderDPRanks: "1-1"}, 200, "1"},
		{"client pin", "client", map[string]string{HeaderPinWorker: "2"}, 403, ""},
		{"client labels", "client", map[string]string{HeaderRequireLabels: "zone=a"}, 403, ""},
		{"bad pin", "admin", map[string]string{HeaderPinWorker: "two"}, 400, ""},
		{"bad ranks", "admin", map[string]string{HeaderDPRanks: "3-1"}, 400, ""},
		{"unknown worker", "admin", map[string]string{HeaderPinWorker: "9"}, 503, ""},
		{"no such rank", "admin", map[string]string{HeaderPinWorker: "2:1"}, 503, ""},
		{"no such label", "admin", map[string]string{HeaderRequireLabels: "zone=c"}, 503, ""},
		{"ranks out of range", "admin", map[string]string{HeaderDPRanks: "5-6"}, 503, ""},
		{"labels and pin disagree", "admin", map[string]string{HeaderPinWorker: "2", HeaderRequireLabels: "zone=a"}, 503, ""},
	} {
		for i := range 4 {
			rec := doPlaced(t, s, "/v1/completions", c.key, body, c.hdr)
			if rec.Code != c.code || (c.worker != "" && rec.Header().Get(HeaderWorker) != c.worker) {
				t.Fatalf("%s #%d: %d worker %q, want %d worker %q: %s", c.name, i, rec.Code, rec.Header().Get(HeaderWorker), c.code, c.worker, rec.Body.String())
			}
		}
	}
	// Without constraints round-robin uses both workers.
	seen := map[string]bool{}
	for range 4 {
		seen[doPlaced(t, s, "/v1/completions", "client", body, nil).Header().Get(HeaderWorker)] = true
	}
	if !seen["1"] || !seen["2"] {
		t.Fatalf("unconstrained requests went to %v", seen)
	}
}

// TestPlacementRoute: POST /route's pin_worker, dp_ranks and labels, as
// the headers, with the admin key only.
func TestPlacementRoute(t *testing.T) {
	s, _ := placementServer(t)
	for _, c := range []struct {
		name, key, body string
		code            int
		worker          uint64
		rank            uint32
	}{
		{"pin rank", "admin", `"pin_worker":"1:1"`, 200, 1, 1},
		{"ranks", "admin", `"dp_ranks":"1"`, 200, 1, 1},
		{"labels", "admin", `"labels":{"zone":"b"}`, 200, 2, 0},
		{"header", "admin", ``, 200, 2, 0}, // HeaderPinWorker below
		{"client", "client", `"pin_worker":"1"`, 403, 0, 0},
		{"unknown", "admin", `"pin_worker":"7"`, 503, 0, 0},
		{"bad", "admin", `"dp_ranks":"x"`, 400, 0, 0},
	} {
		body := `{"tokens":[1,2,3,4]`
		if c.body != "" {
			body += "," + c.body
		}
		body += "}"
		var hdr map[string]string
		if c.name == "header" {
			hdr = map[string]string{HeaderPinWorker: "2"}
		}
		for i := range 3 {
			rec := doPlaced(t, s, "/route", c.key, body, hdr)
			if rec.Code != c.code {
				t.Fatalf("%s #%d: %d, want %d: %s", c.name, i, rec.Code, c.code, rec.Body.String())
			}
			if c.code != 200 {
				continue
			}
			var rr RouteResponse
			if err := json.Unmarshal(rec.Body.Bytes(), &rr); err != nil || rr.Worker != c.worker || rr.DPRank != c.rank {
				t.Fatalf("%s #%d: worker %d rank %d, want %d %d (%v)", c.name, i, rr.Worker, rr.DPRank, c.worker, c.rank, err)
			}
		}
	}
}

// TestPlacementPick: the endpoint picker's trusted placement needs no
// key; its header placement does; a pin outside the endpoint subset is
// 503.
func TestPlacementPick(t *testing.T) {
	s, _ := placementServer(t)
	two := uint64(2)
	body := []byte(`{"prompt":"hello","max_tokens":1}`)
	client := http.Header{"Authorization": {"Bearer client"}}
	for i := range 3 {
		p, e := s.Pick(context.Background(), PickRequest{Path: "/v1/completions", Header: client.Clone(), Body: body,
			Placement: &Placement{PinWorker: &two}})
		if e != nil || p.Worker.ID != 2 {
			t.Fatalf("trusted pin #%d: %v %v", i, p, e)
		}
		p.Done(OutcomeOK)
	}
	h := client.Clone()
	h.Set(HeaderPinWorker, "2")
	if _, e := s.Pick(context.Background(), PickRequest{Path: "/v1/completions", Header: h, Body: body}); e == nil || e.Status != 403 {
		t.Fatalf("client header pin: %v", e)
	}
	_, e := s.Pick(context.Background(), PickRequest{Path: "/v1/completions", Header: client.Clone(), Body: body,
		Allow: []uint64{1}, Placement: &Placement{PinWorker: &two}})
	if e == nil || e.Status != 503 {
		t.Fatalf("pin outside the subset: %v", e)
	}
}

// TestCacheSaltHeaderForwarded: HeaderCacheSalt wins over the body's
// cache_salt and reaches the engine in the forwarded body; a bad body
// salt is a 400 as in vLLM.
func TestCacheSaltHeaderForwarded(t *testing.T) {
	s, ws := placementServer(t)
	for _, c := range []struct {
		body, hdr, want string
		code            int
	}{
		{`{"prompt":"hi","max_tokens":1}`, "tenant-a", `"cache_salt":"tenant-a"`, 200},
		{`{"prompt":"hi","max_tokens":1,"cache_salt":"mine"}`, "tenant-a", `"cache_salt":"tenant-a"`, 200},
		{`{"prompt":"hi","max_tokens":1,"cache_salt":"mine"}`, "", `"cache_salt":"mine"`, 200},
		{`{"prompt":"hi","max_tokens":1,"cache_salt":""}`, "", ``, 400},
		{`{"prompt":"hi","max_tokens":1,"cache_salt":7}`, "", ``, 400},
	} {
		hdr := map[string]string{HeaderPinWorker: "1"}
		if c.hdr != "" {
			hdr[HeaderCacheSalt] = c.hdr
		}
		rec := doPlaced(t, s, "/v1/completions", "admin", c.body, hdr)
		if rec.Code != c.code {
			t.Fatalf("%s: %d, want %d: %s", c.body, rec.Code, c.code, rec.Body.String())
		}
		if c.code != 200 {
			continue
		}
		ws[1].mu.Lock()
		got := string(ws[1].bodies["/v1/completions"])
		ws[1].mu.Unlock()
		if !strings.Contains(got, c.want) || strings.Count(got, "cache_salt") != 1 {
			t.Fatalf("%s with header %q: forwarded %s, want %s", c.body, c.hdr, got, c.want)
		}
	}
}
