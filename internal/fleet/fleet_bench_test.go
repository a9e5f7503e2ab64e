package fleet_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/kvrouter/kvrouter/internal/fleet"
	"github.com/kvrouter/kvrouter/internal/frontend"
	"github.com/kvrouter/kvrouter/mocker"
)

// BenchmarkStream compares a streamed 16-token completion sent to a mocker
// directly and through the frontend (mocker speedup 0: no modeled time, so
// the difference is the frontend's CPU and network cost). Run with
// -cpuprofile to see where the frontend spends it.
func BenchmarkStream(b *testing.B) {
	eng := mocker.DefaultConfig()
	eng.SpeedupRatio = 0
	fc := frontend.DefaultConfig()
	fc.Seed, fc.LoadPollInterval = 1, -1
	f, err := fleet.New(fleet.Config{Workers: 1, Engine: eng, Frontend: fc, Direct: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	defer func() { cancel(); <-done }()
	<-f.Ready()
	prompt := "[" + strings.TrimSuffix(strings.Repeat("17,", 256), ",") + "]"
	for _, target := range []struct{ name, url string }{{"direct", f.Workers()[0].URL}, {"frontend", f.URL()}} {
		b.Run(target.name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				body := fmt.Sprintf(`{"prompt":%s,"max_tokens":16,"stream":true,"user":"%d"}`, prompt, i)
				resp, err := http.Post(target.url+"/v1/completions", "application/json", strings.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				n, _ := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || n == 0 {
					b.Fatalf("status %d", resp.StatusCode)
				}
			}
		})
	}
}
