package mockerd

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/kvrouter/kvrouter/internal/oai"
	"github.com/kvrouter/kvrouter/kvevents"
)

// TestPeerHintParams: the frontend's peer-KV hint (kv_transfer_params in
// the decode-hop shape with no remote_request_id, naming the peer's
// host:port and its leading block count) makes the mocker pull the
// blocks it lacks over its KV link: they come back as cached tokens and
// Stored events, the pull's time in oai.TrailerKVTransfer, and nothing is
// sent to the peer (no request of its was held for this one).
func TestPeerHintParams(t *testing.T) {
	var peerCalls atomic.Int64
	peer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { peerCalls.Add(1) }))
	defer peer.Close()
	s, url, rec := newDisaggServer(t, 2, 0)
	ids := make([]string, 72) // 4 full blocks of 16 and 8 tokens
	for i := range ids {
		ids[i] = strconv.Itoa(3000 + i)
	}
	host, port, _ := net.SplitHostPort(strings.TrimPrefix(peer.URL, "http://"))
	n, _ := strconv.Atoi(port)
	engine := "peer-w1"
	hint, _ := json.Marshal(oai.KVTransferParams{DoRemotePrefill: true, RemoteEngineID: &engine,
		RemoteBlockIDs: []int{0, 1, 2}, RemoteHost: &host, RemotePort: &n, TPSize: 1})
	body := fmt.Sprintf(`{"prompt":[%s],"max_tokens":2,"kv_transfer_params":%s}`, strings.Join(ids, ","), hint)
	resp, b := post(t, url+"/v1/completions", body)
	var c oai.Completion
	if resp.StatusCode != 200 || json.Unmarshal(b, &c) != nil {
		t.Fatalf("hinted request: %d %s", resp.StatusCode, b)
	}
	if got := c.Usage.PromptTokensDetails.CachedTokens; got != 3*16 {
		t.Fatalf("cached tokens %d, want the 3 hinted blocks (48)", got)
	}
	if v, err := strconv.ParseFloat(resp.Trailer.Get(oai.TrailerKVTransfer), 64); err != nil || v < 0.001 {
		t.Fatalf("transfer trailer %q (%v), want >= 0.001 s", resp.Trailer.Get(oai.TrailerKVTransfer), err)
	}
	stored := storedBlocks(rec)
	if stored < 4 {
		t.Fatalf("stored %d blocks, want the 4 full prompt blocks", stored)
	}
	s.releases.Wait()
	if n := peerCalls.Load(); n != 0 {
		t.Fatalf("the peer received %d requests, want none", n)
	}
}

// storedBlocks counts the blocks of the Stored events rec received.
func storedBlocks(rec *recorder) int {
	n := 0
	for _, ev := range rec.events() {
		if ev.Kind == kvevents.KindStored {
			n += len(ev.Blocks)
		}
	}
	return n
}
