package discovery_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kvrouter/kvrouter/internal/discovery"
)

// TestLoRARegistration: max_loras and loras are optional (a record
// without them decodes as before), bounded, and --worker takes
// max-loras=N.
func TestLoRARegistration(t *testing.T) {
	many := `"` + strings.Repeat(`a","`, 1024) + `b"`
	for _, tc := range []struct {
		val    string
		want   string
		reason string // "" = accepted
	}{
		{`{"id":4,"url":"http://h:1"}`, "0 []", ""},
		{`{"id":4,"url":"http://h:1","max_loras":2,"loras":["sql"]}`, "2 [sql]", ""},
		{`{"id":4,"url":"http://h:1","max_loras":-1}`, "", discovery.ReasonInvalid},
		{`{"id":4,"url":"http://h:1","max_loras":1025}`, "", discovery.ReasonInvalid},
		{`{"id":4,"url":"http://h:1","loras":[""]}`, "", discovery.ReasonInvalid},
		{`{"id":4,"url":"http://h:1","loras":[` + many + `]}`, "", discovery.ReasonInvalid},
		{`{"id":4,"url":"http://h:1","loras":"sql"}`, "", discovery.ReasonDecode},
	} {
		got, err := discovery.DecodeRegistration("w.4", []byte(tc.val))
		switch {
		case tc.reason == "" && err != nil:
			t.Errorf("%.60s: refused: %v", tc.val, err)
		case tc.reason == "" && fmt.Sprint(got.MaxLoRAs, " ", got.LoRAs) != tc.want:
			t.Errorf("%.60s: got %d %v, want %s", tc.val, got.MaxLoRAs, got.LoRAs, tc.want)
		case tc.reason != "" && discovery.Reason(err) != tc.reason:
			t.Errorf("%.60s: reason %q (%v), want %s", tc.val, discovery.Reason(err), err, tc.reason)
		}
	}
	w, err := discovery.ParseWorkerFlag("http://h:1,id=2,max-loras=4")
	if err != nil || w.MaxLoRAs != 4 {
		t.Fatalf("--worker max-loras=4: %d, %v", w.MaxLoRAs, err)
	}
	if _, err := discovery.ParseWorkerFlag("http://h:1,max-loras=-2"); err == nil {
		t.Fatal("--worker max-loras=-2 accepted")
	}
}
