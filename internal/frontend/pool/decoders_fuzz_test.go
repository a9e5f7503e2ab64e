package pool

import (
	"bytes"
	"math"
	"testing"
)

// FuzzParseEngineMetrics: whatever an engine's /metrics page holds (read
// up to 16 MiB), parsing it fails or yields loads the router can use: KV
// usage within [0, 1] (a NaN sample once passed as a reading), never a
// panic.
func FuzzParseEngineMetrics(f *testing.F) {
	for _, s := range []string{
		"# TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc{engine=\"0\"} 0.5\nvllm:kv_cache_usage_perc{engine=\"1\"} 2\n" +
			"vllm:num_requests_running{engine=\"0\"} 3\nvllm:num_requests_waiting 1\n",
		"vllm:cache_config_info{block_size=\"16\",num_gpu_blocks=\"1000\"} 1\nprocess_start_time_seconds 1.7e9\n",
		"sglang:token_usage{dp_rank=\"4294967296\"} NaN\nsglang:num_running_reqs -1\n",
		"# TYPE x counter\nx_total{a=\"\\\"\"} +Inf\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		rep, err := parseEngineMetrics(bytes.NewReader(data))
		if err != nil {
			return
		}
		for rk, x := range rep.Ranks {
			if x == nil {
				t.Fatalf("rank %d: nil load", rk)
			}
			if x.HasKV && (math.IsNaN(x.KVUsage) || x.KVUsage < 0 || x.KVUsage > 1) {
				t.Fatalf("rank %d: KV usage %v outside [0, 1]", rk, x.KVUsage)
			}
		}
		if rep.Known < 0 || len(rep.Ranks) > rep.Known {
			t.Fatalf("%d ranks from %d known samples", len(rep.Ranks), rep.Known)
		}
	})
}

// FuzzDecodeModels: whatever an engine's GET /v1/models answers, decoding
// it fails or yields models whose learnt adapters stay within the
// "lora_adapters" bounds.
func FuzzDecodeModels(f *testing.F) {
	f.Add([]byte(`{"object":"list","data":[{"id":"base","root":"/m"},{"id":"sql-lora","root":"/a","parent":"base"}]}`))
	f.Add([]byte(`{"data":[{"id":"x","parent":"x"},{"id":"","parent":"b"},{"id":"y","parent":null}]}`))
	f.Add([]byte(`{"data":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		models, err := decodeModels(bytes.NewReader(data))
		if err != nil {
			return
		}
		a := newAdapterSet(nil)
		added := a.learn(models)
		n, b := a.learnt.Size()
		if int(n) != len(added) || n > maxLearntAdapters || b > maxLearntAdapters*(maxAdapterName+adapterCost) {
			t.Fatalf("%d names learnt, store holds %d entries, %d bytes", len(added), n, b)
		}
		for _, name := range added {
			if a.lora(name) != name || len(name) > maxAdapterName {
				t.Fatalf("learnt %q, lora(%q) = %q", name, name, a.lora(name))
			}
		}
	})
}
