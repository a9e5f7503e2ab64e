package epp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	filterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"github.com/kvrouter/kvrouter/internal/app"
	"github.com/kvrouter/kvrouter/internal/discovery"
	"github.com/kvrouter/kvrouter/internal/epp"
	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/kvhash"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// BenchmarkDecision measures one routing decision per request through
// the endpoint picker's gRPC stream (Envoy's FULL_DUPLEX_STREAMED
// sequence: headers, the body in 64 KiB chunks, the pick on the headers'
// answer, the body echoed, then the response's end) and through serve's
// POST /route on the same requests, side by side: 64 workers, 32k-token
// prompts (token ids, so both paths parse the same JSON and tokenize
// nothing), each sharing a 16k-token prefix one worker holds. Metrics:
// p50/p99 decision latency (the EPP: last body chunk sent to the pick
// received; /route: request to response) and requests per CPU-second of
// the process (client included, the same for both).
//
//	go test -run '^$' -bench Decision -benchtime 2000x ./internal/epp/
func BenchmarkDecision(b *testing.B) {
	const workers, promptTokens, prefixTokens, prefixes = 64, 32768, 16384, 64
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	sc := app.DefaultServeConfig()
	sc.Logger, sc.NoNATS = log, true
	sc.Frontend.LoadPollInterval = -1
	sc.Frontend.Seed = 1
	sc.Frontend.MaxBodyBytes = 64 << 20
	for i := range workers {
		sc.StaticWorkers = append(sc.StaticWorkers, discovery.Worker{ID: uint64(i + 1), URL: fmt.Sprintf("http://10.0.%d.%d:8000", i/250, i%250+1),
			TotalKVBlocks: 1 << 16, MaxBatchedTokens: 8192})
	}
	httpLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	grpcLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	sc.Listener = httpLn
	s, err := app.NewServe(sc)
	if err != nil {
		b.Fatal(err)
	}
	ec := epp.DefaultConfig()
	ec.GRPCListener = grpcLn
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- epp.RunWith(ctx, s, ec, nil) }()
	defer func() { cancel(); <-done }()
	<-s.Ready()

	// Prefix p is cached on worker p%64+1.
	bs := sc.Frontend.Router.BlockSize
	prefix := func(p int) []uint32 {
		t := make([]uint32, prefixTokens)
		for i := range t {
			t[i] = uint32(p*100000 + i%50000)
		}
		return t
	}
	for p := range prefixes {
		ev := &kvevents.Event{WorkerID: uint64(p%workers + 1), EventID: 1, Kind: kvevents.KindStored}
		for i, l := range kvhash.LocalHashes(prefix(p), bs, kvhash.Seed("", "")) {
			ev.Blocks = append(ev.Blocks, kvevents.Block{Hash: uint64(p)<<32 | uint64(i), Local: l})
		}
		if err := s.Frontend().Apply(ev); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.Frontend().Flush(ctx); err != nil {
		b.Fatal(err)
	}
	bodies := make([][]byte, 256)
	for i := range bodies {
		toks := append(prefix(i%prefixes), make([]uint32, promptTokens-prefixTokens)...)
		for j := prefixTokens; j < promptTokens; j++ {
			toks[j] = uint32(7_000_000 + i*promptTokens + j)
		}
		bodies[i], _ = json.Marshal(map[string]any{"model": "m", "prompt": toks, "max_tokens": 16})
	}

	conn, err := grpc.NewClient(grpcLn.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	client := extprocv3.NewExternalProcessorClient(conn)
	hc := &http.Client{}
	routeURL := s.URL() + "/route"

	run := func(b *testing.B, one func(body []byte) time.Duration) {
		h := hdrhistogram.New(1, int64(10*time.Second/time.Microsecond), 3)
		cpu0 := cpuTime()
		b.ResetTimer()
		for i := range b.N {
			d := one(bodies[i%len(bodies)])
			_ = h.RecordValue(max(d.Microseconds(), 1))
		}
		b.StopTimer()
		cpu := (cpuTime() - cpu0).Seconds()
		b.ReportMetric(float64(h.ValueAtQuantile(50)), "p50-µs")
		b.ReportMetric(float64(h.ValueAtQuantile(99)), "p99-µs")
		b.ReportMetric(float64(b.N)/cpu, "req/cpu-s")
	}
	b.Run("path=epp", func(b *testing.B) {
		run(b, func(body []byte) time.Duration { return eppDecision(b, client, body) })
	})
	b.Run("path=route", func(b *testing.B) {
		run(b, func(body []byte) time.Duration {
			t0 := time.Now()
			resp, err := hc.Post(routeURL, "application/json", bytes.NewReader(body))
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				b.Fatalf("/route: %s", resp.Status)
			}
			return time.Since(t0)
		})
	})
}

// eppDecision plays one request through the picker and returns the time
// from its last request body chunk to the pick.
func eppDecision(b *testing.B, client extprocv3.ExternalProcessorClient, body []byte) time.Duration {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := client.Process(ctx)
	if err != nil {
		b.Fatal(err)
	}
	mode := filterv3.ProcessingMode_FULL_DUPLEX_STREAMED
	must := func(err error) {
		if err != nil {
			b.Fatal(err)
		}
	}
	must(st.Send(&extprocv3.ProcessingRequest{
		ProtocolConfig: &extprocv3.ProtocolConfiguration{RequestBodyMode: mode, ResponseBodyMode: mode},
		Request: &extprocv3.ProcessingRequest_RequestHeaders{RequestHeaders: &extprocv3.HttpHeaders{
			Headers: headerMap("/v1/completions", nil)}}}))
	var t0 time.Time
	for off := 0; off < len(body); off += 64 << 10 {
		end := min(off+64<<10, len(body))
		if end == len(body) {
			t0 = time.Now()
		}
		must(st.Send(&extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestBody{
			RequestBody: &extprocv3.HttpBody{Body: body[off:end], EndOfStream: end == len(body)}}}))
	}
	r, err := st.Recv()
	must(err)
	d := time.Since(t0)
	if r.GetRequestHeaders() == nil {
		b.Fatalf("no pick: %v", r)
	}
	for {
		r, err := st.Recv()
		must(err)
		if r.GetRequestBody().GetResponse().GetBodyMutation().GetStreamedResponse().GetEndOfStream() {
			break
		}
	}
	// The response ends at once (frees the request's load).
	must(st.Send(respHeaders(200, "application/json")))
	_, err = st.Recv()
	must(err)
	must(st.Send(respBody("{}", true)))
	_, err = st.Recv()
	must(err)
	must(st.CloseSend())
	_, _ = st.Recv()
	return d
}

// cpuTime is the process's user+system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
