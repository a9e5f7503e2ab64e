package mockerd

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/kvrouter/kvrouter/internal/oai"
	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/kvhash"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestLoRASlots: with two slots, adapters load on first use, the least
// recently used one is unloaded for a third, GET /v1/models lists the
// loaded ones with their parent, and an adapter's blocks hash with its
// name as seed; without slots an adapter name is a 404.
func TestLoRASlots(t *testing.T) {
	s, hs, rec := newTestServerWith(t, func(c *Config) { c.MaxLoRAs = 2 })
	prompt := "[" + strings.TrimSuffix(strings.Repeat("5,", 20), ",") + "]"
	for _, m := range []string{"sql", "chat", "sql", "kvrouter-mock", "code"} {
		if resp, b := post(t, hs.URL+"/v1/completions", `{"model":"`+m+`","prompt":`+prompt+`,"max_tokens":1}`); resp.StatusCode != 200 {
			t.Fatalf("model %s: %d %s", m, resp.StatusCode, b)
		}
	}
	resp, err := http.Get(hs.URL + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	var list oai.ModelList
	err = json.NewDecoder(resp.Body).Decode(&list)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range list.Data {
		got = append(got, m.ID+"<"+m.Parent)
	}
	// chat was the least recently used when code came.
	if fmt.Sprint(got) != "[kvrouter-mock< code<kvrouter-mock sql<kvrouter-mock]" {
		t.Fatalf("/v1/models: %v", got)
	}
	if n := testutil.ToFloat64(s.loras.loads); n != 3 {
		t.Fatalf("loads %v, want 3", n)
	}
	// The first stored block of each request: sql's, chat's, base model's
	// and code's differ; sql's equals the adapter-seeded hash.
	first := make([]uint32, 16)
	for i := range first {
		first[i] = 5
	}
	var firsts []uint64
	for _, ev := range rec.events() {
		if ev.Kind == kvevents.KindStored && len(ev.Blocks) > 0 && !ev.HasParent {
			firsts = append(firsts, ev.Blocks[0].Local)
		}
	}
	want := []uint64{kvhash.Local(first, kvhash.Seed("sql", "")), kvhash.Local(first, kvhash.Seed("chat", "")),
		kvhash.Local(first, kvhash.DefaultSeed), kvhash.Local(first, kvhash.Seed("code", ""))}
	if fmt.Sprint(firsts) != fmt.Sprint(want) {
		t.Fatalf("first blocks stored %x, want %x", firsts, want)
	}

	_, hs0, _ := newTestServer(t)
	if resp, b := post(t, hs0.URL+"/v1/completions", `{"model":"sql","prompt":`+prompt+`}`); resp.StatusCode != 404 {
		t.Fatalf("adapter without slots: %d %s", resp.StatusCode, b)
	}
}
