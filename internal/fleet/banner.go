package fleet

import (
	"context"
	"fmt"
	"io"
)

// Banner is what `kvrouter up` tells its user once the fleet is ready:
// where the router and NATS listen and how to try them.
type Banner struct {
	URL, NATSURL    string
	Workers         int
	Prefill, Decode int    // 0, 0: aggregated
	APIKey          string // sent in the examples' Authorization header; "" = none
}

// Banner returns f's banner; keys are the router's client API keys (the
// first is used in the examples). Valid once f is ready.
func (f *Fleet) Banner(keys []string) Banner {
	b := Banner{URL: f.URL(), NATSURL: f.NATSURL(), Workers: len(f.Workers())}
	b.Prefill, b.Decode = f.Pools()
	if len(keys) > 0 {
		b.APIKey = keys[0]
	}
	return b
}

// WriteText prints the banner.
func (b Banner) WriteText(w io.Writer) error {
	auth := ""
	if b.APIKey != "" {
		auth = " -H 'Authorization: Bearer " + b.APIKey + "'"
	}
	if b.Prefill > 0 {
		fmt.Fprintf(w, "disaggregated: %d prefill and %d decode workers (x-kvrouter-prefill-worker names the prefill hop)\n", b.Prefill, b.Decode)
	}
	_, err := fmt.Fprintf(w, `kvrouter is up: router %s, %d mocker workers, embedded NATS %s

Try a streamed completion:

  curl -sN %s/v1/completions -H 'Content-Type: application/json'%s \
    -d '{"model":"kvrouter-mock","prompt":"Explain KV-cache-aware routing in one paragraph.","max_tokens":32,"stream":true}'

Add -i to see which worker served it (x-kvrouter-worker) and the cached prefix it found
(x-kvrouter-overlap-blocks). Send a long prompt twice: the second lands on the same worker.
Routing decision without proxying:  curl -s %s/route -d '{"prompt":"hello"}'
Metrics:                            curl -s %s/metrics | grep ^kvrouter_
Index per worker:                   curl -s %s/debug/index

Ctrl-C stops everything.
`, b.URL, b.Workers, b.NATSURL, b.URL, auth, b.URL, b.URL, b.URL)
	return err
}

// RunAnnounced is Run that writes f's banner (keys as in Banner) to w
// once the fleet is ready; ready says whether it got that far. A banner
// that fails to write is logged, not fatal: the fleet is up either way.
func (f *Fleet) RunAnnounced(ctx context.Context, w io.Writer, keys []string) (ready bool, err error) {
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	select {
	case <-f.Ready():
		if err := f.Banner(keys).WriteText(w); err != nil {
			f.log.Warn("write banner", "err", err)
		}
	case err := <-done:
		return false, err
	}
	return true, <-done
}
