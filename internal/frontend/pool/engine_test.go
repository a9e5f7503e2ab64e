package pool

import (
	"fmt"
	"strings"
	"testing"
)

// vllmMetrics is a /metrics page in vLLM's names: two dp ranks (engine
// label), its cache config info.
const vllmMetrics = `# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 3
vllm:num_requests_running{engine="1",model_name="m"} 1
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="m"} 2
vllm:num_requests_waiting{engine="1",model_name="m"} 0
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.5
vllm:kv_cache_usage_perc{engine="1",model_name="m"} 0.125
# TYPE vllm:gpu_cache_usage_perc gauge
vllm:gpu_cache_usage_perc{engine="0",model_name="m"} 0.9
# TYPE vllm:cache_config_info gauge
vllm:cache_config_info{block_size="16",cache_dtype="auto",engine="0",num_cpu_blocks="0",num_gpu_blocks="4096"} 1
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{engine="0",model_name="m"} 1234
`

// sglangMetrics is a /metrics page in SGLang's names.
const sglangMetrics = `# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{model_name="m"} 4
# TYPE sglang:num_queue_reqs gauge
sglang:num_queue_reqs{model_name="m"} 6
# TYPE sglang:token_usage gauge
sglang:token_usage{model_name="m"} 0.28
`

// TestParseEngineMetrics: vLLM's and SGLang's pages give per-rank load
// (vLLM's engine label is the dp rank), the KV usage from the current name
// before the older one, and vLLM's cache config; a page with none of the
// names counts nothing.
func TestParseEngineMetrics(t *testing.T) {
	show := func(rep engineReport) string {
		var b strings.Builder
		fmt.Fprintf(&b, "known=%d block_size=%d gpu_blocks=%d", rep.Known, rep.BlockSize, rep.GPUBlocks)
		for rk := range uint32(3) {
			if l := rep.Ranks[rk]; l != nil {
				fmt.Fprintf(&b, " r%d{kv=%g/%v run=%g wait=%g}", rk, l.KVUsage, l.HasKV, l.Running, l.Waiting)
			}
		}
		return b.String()
	}
	for _, tc := range []struct{ name, page, want string }{
		{"vllm", vllmMetrics, "known=7 block_size=16 gpu_blocks=4096 r0{kv=0.5/true run=3 wait=2} r1{kv=0.125/true run=1 wait=0}"},
		{"sglang", sglangMetrics, "known=3 block_size=0 gpu_blocks=0 r0{kv=0.28/true run=4 wait=6}"},
		{"other", "# TYPE go_goroutines gauge\ngo_goroutines 12\n", "known=0 block_size=0 gpu_blocks=0"},
	} {
		rep, err := parseEngineMetrics(strings.NewReader(tc.page))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := show(rep); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
	if _, err := parseEngineMetrics(strings.NewReader("vllm:num_requests_running{ 3\n")); err == nil {
		t.Error("a malformed page parsed without error")
	}
}
