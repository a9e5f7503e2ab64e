package fleet_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/kvrouter/kvrouter/internal/fleet"
	"github.com/kvrouter/kvrouter/internal/frontend"
	"github.com/kvrouter/kvrouter/selector"
)

// TestLoRAConvergesOnMockerFleet: four mockers with one adapter slot
// each (registered as max_loras); requests for an adapter nobody has
// loaded (as the frontend knows: its /v1/models poll has not run again)
// all go to its rendezvous home, which every other worker pays one load
// more than (selector lora.go), and which then lists it loaded on
// /v1/models.
func TestLoRAConvergesOnMockerFleet(t *testing.T) {
	e := startFleet(t, true, 4, 0, func(c *frontend.Config) { c.LoRAAdapters = []string{"sql", "chat", "law"} },
		func(c *fleet.Config) { c.MaxLoRAs = 1 })
	ask := func(model string, i int) string {
		t.Helper()
		body := fmt.Sprintf(`{"model":%q,"prompt":%q,"max_tokens":2}`, model, strings.Repeat(fmt.Sprintf("prompt %d of %s. ", i, model), 8))
		resp, err := http.Post(e.f.URL()+"/v1/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("%s request %d: %d %s", model, i, resp.StatusCode, b)
		}
		return resp.Header.Get(frontend.HeaderWorker)
	}
	// Three adapters whose rendezvous workers differ (sql 4, chat 2, law
	// 1), so no single worker taking everything passes.
	var win uint64
	for _, a := range []string{"sql", "chat", "law"} {
		win, _ = selector.Rendezvous(a, []uint64{1, 2, 3, 4})
		for i := range 6 {
			if w := ask(a, i); w != fmt.Sprint(win) {
				t.Fatalf("%s request %d went to worker %s, rendezvous says %d", a, i, w, win)
			}
		}
	}
	srv := e.f.Workers()[win-1]
	resp, err := http.Get(srv.URL + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct {
		Data []struct{ ID, Parent string } `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	if len(list.Data) != 2 || list.Data[1].ID != "law" || list.Data[1].Parent != model {
		t.Fatalf("worker %d /v1/models: %+v", win, list.Data)
	}
}
