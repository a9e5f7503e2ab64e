package adversarial

import (
	"strings"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/internal/e2e"
)

// TestStoresExported: a real router exports every per-client store with
// its limits (kvrouter_store_*), the flags set them, and the stores a
// request fills are empty again once it is answered.
func TestStoresExported(t *testing.T) {
	skipShort(t)
	nats := e2e.StartNATS(t, bins.NATSServer)
	e2e.StartMocker(t, bins.Kvrouter, 1, nats.URL(), "--speedup-ratio", "0")
	r := e2e.StartRouter(t, bins.Kvrouter, "router", nats.URL(),
		"--tokenizers", "2", "--tokenize-queue", "3", "--tokenize-queue-bytes", "5000000",
		"--max-streams", "11", "--max-stream-buffer-bytes", "7000000", "--sync-max-peers", "13")
	until(t, 60*time.Second, "router ready with the mocker", func() bool {
		code, body, _ := call(t, "GET", r.URL()+"/readyz", "", "")
		return code == 200 && strings.Contains(body, "1 workers")
	})
	complete(t, r, "fill and empty the stores")
	for _, c := range []struct {
		store          string
		entries, bytes float64
	}{
		{"tokenize_queue", 5, 5000000},
		{"stream_buffers", 11, 7000000},
		{"lora_adapters", 4096, 4096 * (1024 + 64)},
		{"replica_peers", 13, 13 * (256 + 96)},
		{"bookings", 4096, 64 << 20},
	} {
		q := `{store="` + c.store + `"}`
		if n, b := metric(t, r, "kvrouter_store_limit_entries"+q), metric(t, r, "kvrouter_store_limit_bytes"+q); n != c.entries || b != c.bytes {
			t.Errorf("store %s limits %v entries, %v bytes; want %v, %v", c.store, n, b, c.entries, c.bytes)
		}
	}
	for _, s := range []string{"tokenize_queue", "stream_buffers"} {
		q := `{store="` + s + `"}`
		until(t, 10*time.Second, s+" empty after the answer", func() bool {
			return metric(t, r, "kvrouter_store_entries"+q) == 0 && metric(t, r, "kvrouter_store_bytes"+q) == 0
		})
	}
}
