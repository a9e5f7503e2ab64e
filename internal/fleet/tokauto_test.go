package fleet_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/internal/frontend"
)

// TestMockerTokenizerSelfTest: in a fleet (kvrouter up: the mock model,
// the built-in tokenizer in router and mockers) every mocker's /tokenize
// answers as the router tokenizes, so each passes the tokenizer
// self-test and gets completion prompts as token ids, as before the
// self-test existed.
func TestMockerTokenizerSelfTest(t *testing.T) {
	e := start(t, true, 2, 100, func(fc *frontend.Config) { fc.LoadPollInterval = 10 * time.Millisecond })
	deadline := time.Now().Add(20 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		resp, err := http.Get(e.f.URL() + "/debug/index")
		if err != nil {
			t.Fatal(err)
		}
		var rep frontend.IndexReport
		err = json.NewDecoder(resp.Body).Decode(&rep)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		matched := 0
		for _, w := range rep.Workers {
			if w.Tokenizer != nil && w.Tokenizer.Outcome == frontend.SelfTestMatch && w.Tokenizer.ForwardIDs &&
				w.Tokenizer.Canaries == 3 && len(w.Tokenizer.Skipped) == 0 {
				matched++
			}
		}
		if matched == 2 && len(rep.Workers) == 2 {
			return
		}
		if time.Now().After(deadline) {
			b, _ := json.Marshal(rep.Workers)
			t.Fatalf("self-tests not all matched with 3 canaries: %s", b)
		}
		<-tick.C
	}
}
