package adversarial

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/internal/e2e"
)

// engineMetric reads one sample of a worker's /metrics (any labels), -1
// when absent or unreachable.
func engineMetric(t testing.TB, base, name string) float64 {
	t.Helper()
	code, body, _ := call(t, "GET", base+"/metrics", "", "")
	if code != 200 {
		return -1
	}
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `(?:\{[^}]*\})? (\S+)$`).FindStringSubmatch(body)
	if m == nil {
		return -1
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v
}

// TestClientCannotDriveEngines replays, against a real router and
// mocker, what a client (or a faulty prefill worker) sent to reach past
// the router: the engines' KV transfer fields, a fresh fake bearer per
// tracked booking, a prefill answer that is not an object, and a stream
// it stops reading.
func TestClientCannotDriveEngines(t *testing.T) {
	skipShort(t)
	nats := e2e.StartNATS(t, bins.NATSServer)
	// speedup 0: the mocker streams as fast as it can (the slow reader's
	// socket fills at once).
	m := e2e.StartMocker(t, bins.Kvrouter, 1, nats.URL(), "--speedup-ratio", "0")
	mockerURL := "http://127.0.0.1:" + strconv.Itoa(m.Port)
	r := e2e.StartRouter(t, bins.Kvrouter, "router", nats.URL(),
		"--booking-ttl", "3s", "--stream-write-timeout", "500ms", "--load-poll", "100ms")
	until(t, 60*time.Second, "router ready with the mocker", func() bool {
		code, body, _ := call(t, "GET", r.URL()+"/readyz", "", "")
		return code == 200 && strings.Contains(body, "1 workers")
	})
	complete(t, r, "warm up")

	t.Run("kv-transfer-params", func(t *testing.T) {
		// A decode worker told do_remote_decode holds the prompt's blocks
		// for its hold timeout (480 s), uncounted by the router.
		prompt := strings.Repeat("a client must not make the engine hold its blocks ", 200)
		code, body, _ := call(t, "POST", r.URL()+"/v1/completions", "", `{"model":"kvrouter-mock","max_tokens":2,"prompt":`+
			strconv.Quote(prompt)+`,"kv_transfer_params":{"do_remote_decode":true,"do_remote_prefill":false},"bootstrap_host":"198.51.100.7"}`)
		if code != 200 {
			t.Fatalf("%d %s", code, body)
		}
		until(t, 20*time.Second, "the mocker's KV cache free again (no blocks held for a remote decode)", func() bool {
			alive(t, r)
			return engineMetric(t, mockerURL, "vllm:kv_cache_usage_perc") == 0
		})
		if n := metric(t, r, `kvrouter_client_fields_stripped_total{field="kv_transfer_params"}`); n < 1 {
			t.Errorf("stripped kv_transfer_params counted %v times", n)
		}
	})

	t.Run("fake-bearer-bookings", func(t *testing.T) {
		// No --api-key: a bearer is not verified, so it does not name the
		// caller's booking quota (64).
		ok, refused := 0, 0
		for i := range 100 {
			switch code, body, _ := call(t, "POST", r.URL()+"/route", "fake-"+strconv.Itoa(i), `{"prompt":"book me","track":true}`); code {
			case 200:
				ok++
			case 429:
				refused++
			default:
				t.Fatalf("tracked /route: %d %s", code, body)
			}
		}
		if ok != 64 || refused != 36 {
			t.Errorf("%d accepted, %d refused with a fresh fake key each; want 64 and 36", ok, refused)
		}
		if n := metric(t, r, `kvrouter_store_limit_entries{store="bookings"}`); n != 4096 {
			t.Errorf("bookings store limit %v, want 4096", n)
		}
		until(t, 20*time.Second, "the bookings expire (--booking-ttl)", func() bool {
			return metric(t, r, `kvrouter_store_entries{store="bookings"}`) == 0 && metric(t, r, "kvrouter_inflight_requests") == 0
		})
	})

	t.Run("slow-reader", func(t *testing.T) {
		c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(r.Port))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		body := `{"model":"kvrouter-mock","stream":true,"max_tokens":200000,"prompt":"stream to a client that reads nothing"}`
		if _, err := io.WriteString(c, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "+
			strconv.Itoa(len(body))+"\r\n\r\n"+body); err != nil {
			t.Fatal(err)
		}
		// Nothing is read from c: the router must cut the stream, cancel
		// the mocker's request and release its load.
		until(t, 60*time.Second, "the stream cut and the engine request cancelled", func() bool {
			alive(t, r)
			return metric(t, r, "kvrouter_stream_write_timeouts_total") >= 1 &&
				engineMetric(t, mockerURL, "vllm:num_requests_running") == 0
		})
		if n := metric(t, r, `kvrouter_proxied_total{outcome="client_slow"}`); n < 1 {
			t.Errorf("client_slow outcomes %v", n)
		}
	})

	t.Run("prefill-answer-not-an-object", func(t *testing.T) {
		// A prefill worker whose kv_transfer_params are a string: the
		// decode worker would refuse them with a 400 the client sees.
		pre := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			switch req.URL.Path {
			case "/metrics":
				_, _ = io.WriteString(w, "vllm:num_requests_running 0\n")
			case "/health":
			default:
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, `{"id":"p","object":"text_completion","choices":[{"text":"x"}],"kv_transfer_params":"not-an-object"}`)
			}
		}))
		defer pre.Close()
		pd := e2e.StartStaticRouter(t, bins.Kvrouter, "router-pd", "--worker", pre.URL+",id=1,role=prefill",
			"--worker", mockerURL+",id=2,role=decode", "--disagg-policy", "always", "--load-poll", "100ms")
		until(t, 60*time.Second, "the disaggregated router ready", func() bool {
			code, _, _ := call(t, "GET", pd.URL()+"/readyz", "", "")
			return code == 200
		})
		code, body, hdr := call(t, "POST", pd.URL()+"/v1/completions", "", `{"model":"kvrouter-mock","max_tokens":2,"prompt":"served anyway"}`)
		if code != 200 || hdr.Get("X-Kvrouter-Worker") != "2" {
			t.Fatalf("%d (worker %q) %s", code, hdr.Get("X-Kvrouter-Worker"), body)
		}
		if n := metric(t, pd, "kvrouter_disagg_prefill_invalid_total"); n < 1 {
			t.Errorf("invalid prefill answers counted %v times", n)
		}
		if n := metric(t, pd, `kvrouter_disagg_fallbacks_total{kind="aggregated"}`); n < 1 {
			t.Errorf("aggregated fallbacks %v", n)
		}
		alive(t, pd)
	})
}
