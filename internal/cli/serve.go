package cli

import (
	"github.com/kvrouter/kvrouter/internal/clihelp"
	"github.com/spf13/pflag"

	"github.com/kvrouter/kvrouter/internal/app"
)

// ConfigFlags binds --config (the YAML file app.Resolve reads) and
// --print-config.
func ConfigFlags(fs *pflag.FlagSet, print *bool) {
	fs.String("config", "", "YAML config file (the --print-config shape); precedence: flag > KVROUTER_* env > file > default")
	fs.BoolVar(print, "print-config", false, "print the effective config as YAML (the --config shape) and exit; starts nothing")
}

// BindServe binds serve's flags to c's fields, each defaulting to the
// field's current value (app.Resolve binds them again over a loaded file).
func BindServe(f *pflag.FlagSet, c *app.ServeConfig) {
	fc := &c.Frontend
	rc := &fc.Router
	sc := &rc.Selector
	f.StringVar(&c.Listen, "addr", c.Listen, "listen address")
	f.StringVar(&fc.Model, "model", fc.Model, "served model name (/v1/models; NATS subject token)")
	f.StringVar(&c.Tokenizer, "tokenizer", c.Tokenizer, "auto (the model's tokenizer.json: a model path or the Hugging Face cache; else the workers' /tokenize), builtin, remote (ask workers' /tokenize), or a tokenizer.json file / model directory")
	f.StringSliceVar(&c.TokenizerURLs, "tokenizer-url", c.TokenizerURLs, "with --tokenizer remote: worker base URLs to ask (default: the static workers)")
	TextVar(f, &rc.Policy, "policy", "kv, approx, load, round-robin or random")
	f.StringVar(&fc.Index, "index", fc.Index, "event-fed index: flash or radix")
	f.IntVar(&rc.Index.Flash.Stride, "jump-stride", rc.Index.Flash.Stride, "flash index jump-search stride in blocks")
	f.IntVar(&rc.Index.Concurrent.Writers, "index-writers", rc.Index.Concurrent.Writers, "index writer goroutines (events are sticky per worker+rank)")
	f.DurationVar(&rc.Index.Approx.TTL, "approx-ttl", rc.Index.Approx.TTL, "approx policy: how long a routed request's blocks are remembered")
	f.IntVar(&rc.BlockSize, "block-size", rc.BlockSize, "tokens per KV block; must equal the workers'")
	TextVar(f, &sc.Cost, "cost", "cost model: time (default: time to first token from the worker timing model) or blocks (Dynamo's formula)")
	f.Float64Var(&sc.ImposedWeight, "imposed-weight", sc.ImposedWeight, "time cost: weight of the delay a request's own prefill imposes on later ones, scaled by 1/(1-utilization) (0 = off)")
	f.BoolVar(&sc.PassModel, "pass-model", sc.PassModel, "time cost: price the queue as the engine batches it: the pass in flight (dated by first tokens), then passes shared with the prefill pending behind it (false = the queue ahead in passes of its own)")
	f.BoolVar(&sc.TieUtilization, "tie-utilization", sc.TieUtilization, "at temperature 0, give a cost tie to the least utilized rank before picking at random (false = at random, as Dynamo)")
	f.DurationVar(&rc.Predict.TTL, "predict-ttl", rc.Predict.TTL, "kv policy: lifetime of the predicted side index that lets a burst with a new prefix follow its first request (0 = off)")
	f.BoolVar(&rc.Predict.Active, "predict-active", rc.Predict.Active, "kv policy: credit the prefix a worker's active requests hold (resident until they end, whatever the events say yet)")
	f.BoolVar(&fc.TimingFit, "timing-fit", fc.TimingFit, "time cost: fit each worker's timing model online from its observed TTFT and inter-token latency (DESIGN.md §6 polynomials as prior; false = the prior for every worker)")
	f.Float64Var(&sc.OverlapCredit, "overlap-credit", sc.OverlapCredit, "credit per cached device block (0 = pure load balancing)")
	f.Float64Var(&sc.PrefillLoadScale, "prefill-load-scale", sc.PrefillLoadScale, "weight of the prefill term")
	f.Float64Var(&sc.HostWeight, "host-weight", sc.HostWeight, "credit per host-tier (G2) cached block beyond the device prefix")
	f.Float64Var(&sc.DiskWeight, "disk-weight", sc.DiskWeight, "credit per disk-tier (G3) cached block beyond the device and host prefixes")
	BindTiers(f, rc)
	BindCostKnobs(f, rc, "")
	f.Float64Var(&sc.CreditDecay, "credit-decay", sc.CreditDecay, "shrink the device credit of workers with a prefill backlog (0 = off)")
	f.Float64Var(&sc.ActiveRequestWeight, "active-request-weight", sc.ActiveRequestWeight, "cost in blocks per active request on a worker")
	f.Float64Var(&sc.Temperature, "temperature", sc.Temperature, "softmax temperature (0 = argmin)")
	f.Float64Var(&sc.BusyKVUsage, "busy-kv-usage", sc.BusyKVUsage, "a worker with KV usage above this is busy (0 = off)")
	f.IntVar(&sc.BusyPrefillTokens, "busy-prefill-tokens", sc.BusyPrefillTokens, "a worker with more active prefill tokens is busy (0 = off)")
	f.Float64Var(&sc.BusyPrefillFraction, "busy-prefill-fraction", sc.BusyPrefillFraction, "a worker whose active prefill exceeds this fraction of its batch budget is busy (0 = off)")
	f.Float64Var(&rc.Queue.Threshold, "queue-threshold", rc.Queue.Threshold, "queue requests while every worker's prefill exceeds this fraction of its batch budget (0 = no queue)")
	TextVar(f, &rc.Queue.Policy, "queue-policy", "fcfs or wspt")
	f.IntVar(&rc.Queue.Capacity, "queue-capacity", rc.Queue.Capacity, "most queued requests; beyond, 529 (0 = unbounded)")
	BindTenants(f, rc)
	f.BoolVar(&rc.Affinity.Enabled, "session-affinity", rc.Affinity.Enabled, "bind x-session-id to the worker of its first request")
	f.DurationVar(&rc.Affinity.TTL, "affinity-ttl", rc.Affinity.TTL, "idle time after which a session binding expires (0 = never)")
	f.DurationVar(&rc.Loads.StaleAfter, "stale-limit", rc.Loads.StaleAfter, "release a request without progress for this long (0 = never)")
	BindNATS(f, &c.NATS, "embedded-nats-port")
	f.BoolVar(&c.NoNATS, "no-nats", c.NoNATS, "use neither NATS nor the embedded server (static workers with ZMQ events)")
	f.BoolVar(&c.ResetStates, "reset-states", c.ResetStates, "with NATS: start clean: purge this model's KV events from the stream, its snapshots and its worker registrations before subscribing (refused while another replica holds the snapshot lease)")
	f.BoolVar(&c.ResetForce, "reset-states-force", c.ResetForce, "with --reset-states: purge even while another replica holds the snapshot lease")
	rp := &c.Replica
	f.StringVar(&rp.ID, "replica-id", rp.ID, "this replica's id: snapshot lease holder, load-sync origin, logs (default <hostname>-<pid>)")
	f.DurationVar(&rp.SnapshotInterval, "snapshot-interval", rp.SnapshotInterval, "with NATS: how often the lease holder snapshots the index (0 = never write snapshots nor take the lease)")
	f.IntVar(&rp.SnapshotKeep, "snapshot-keep", rp.SnapshotKeep, "snapshots the writer keeps")
	f.DurationVar(&rp.LeaseTTL, "lease-ttl", rp.LeaseTTL, "a snapshot writer silent this long is replaced by another replica")
	f.BoolVar(&rp.Sync.Enabled, "replica-sync", rp.Sync.Enabled, "with NATS: share bookings (load) and session bindings with the other replicas")
	f.DurationVar(&rp.Sync.Heartbeat, "sync-heartbeat", rp.Sync.Heartbeat, "load-sync heartbeat interval")
	f.DurationVar(&rp.Sync.Timeout, "sync-timeout", rp.Sync.Timeout, "a replica unheard this long has its bookings dropped")
	f.IntVar(&rp.Sync.MaxPeers, "sync-max-peers", rp.Sync.MaxPeers, "other replicas tracked at once; a new origin beyond is refused until one falls silent")
	TextVar(f, &rc.Disagg.Policy, "disagg-policy", "with prefill workers (role=prefill): when a request takes the prefill hop: always, isl, prefill-load or isl-or-load")
	f.IntVar(&rc.Disagg.ISLThreshold, "disagg-isl-threshold", rc.Disagg.ISLThreshold, "isl, isl-or-load: run aggregated on a decode worker below this many uncached prompt tokens")
	f.Float64Var(&rc.Disagg.LoadThreshold, "disagg-load-threshold", rc.Disagg.LoadThreshold, "prefill-load, isl-or-load: run aggregated above this prefill-pool backlog, in engine steps")
	f.Float64Var(&rc.Disagg.TransferWeight, "disagg-transfer-weight", rc.Disagg.TransferWeight, "decode hop: cost of receiving a prompt block by KV transfer relative to computing it")
	f.DurationVar(&fc.PrefillTimeout, "prefill-timeout", fc.PrefillTimeout, "disaggregated requests: longest prefill hop before another prefill worker is tried")
	f.Int64Var(&fc.KVBytesPerToken, "kv-bytes-per-token", fc.KVBytesPerToken, "the model's KV cache bytes per token (kvrouter_disagg_transfer_bytes_total)")
	f.StringArrayVar(&c.Workers, "worker", c.Workers, "static worker: URL[,id=N,role=prefill|decode|both,zmq=tcp://...,replay=tcp://...,pod=P,bs=N,max-num-seqs=N,max-batched-tokens=N,max-loras=N] (repeatable)")
	f.IntVar(&fc.WorkerMaxNumSeqs, "worker-max-num-seqs", fc.WorkerMaxNumSeqs, "time cost: running-request cap per rank (the engines' --max-num-seqs) of workers that do not announce theirs; at it a request waits for a slot (0 = unknown: no cap rule)")
	f.IntVar(&fc.WorkerMaxBatchedTokens, "worker-max-batched-tokens", fc.WorkerMaxBatchedTokens, "token budget per engine step (the engines' --max-num-batched-tokens) of workers that do not announce theirs; --queue-threshold and --busy-prefill-fraction are fractions of it (default: vLLM's on H100-class GPUs; 0 = unknown: never saturated)")
	f.StringVar(&c.WorkersFile, "workers-file", c.WorkersFile, "YAML file with a static worker list")
	f.StringArrayVar(&c.ZMQBind, "zmq-bind", c.ZMQBind, "bind a ZMQ SUB here for engines that connect their KV event PUB to the router, topic kv@<pod>@<model> (tcp://HOST:PORT, repeatable); unauthenticated: an address only the engines reach")
	f.StringArrayVar(&fc.APIKeys, "api-key", fc.APIKeys, "accepted client API key (repeatable; none = open; secret)")
	f.StringArrayVar(&fc.AdminKeys, "admin-key", fc.AdminKeys, "admin API key for /debug/* (repeatable; none = client keys; secret)")
	f.Int64Var(&fc.MaxBodyBytes, "max-body-bytes", fc.MaxBodyBytes, "largest request body accepted (413 beyond)")
	f.IntVar(&fc.MaxPromptTokens, "max-prompt-tokens", fc.MaxPromptTokens, "longest prompt accepted in tokens (0 = no limit)")
	f.IntVar(&fc.Retries, "retries", fc.Retries, "other workers to try when the chosen one is unreachable")
	f.DurationVar(&fc.DrainTimeout, "drain-timeout", fc.DrainTimeout, "how long shutdown waits for in-flight streams")
	f.DurationVar(&fc.LoadPollInterval, "load-poll", fc.LoadPollInterval, "how often workers' GET /metrics is polled (load, KV usage, block size; negative = never)")
	f.StringArrayVar(&fc.LoRAAdapters, "lora-adapter", fc.LoRAAdapters, "model name that is a LoRA adapter, hashed with its name as salt (repeatable; engines' /v1/models adds more)")
	f.Uint64Var(&fc.Seed, "seed", fc.Seed, "tie-break seed (0 = random; replicas must differ)")
	f.BoolVar(&fc.ForwardTokens, "forward-tokens", fc.ForwardTokens, "send completion text prompts as token ids to workers that passed the tokenizer self-test (only with the model's own tokenizer)")
	f.StringVar(&c.LogLevel, "log-level", c.LogLevel, "debug, info, warn or error")
	BindServeHardening(f, c)
	BindDecisionLog(f, &fc.DecisionLog)
}

// ServeSections groups serve's flags (epp's too) for --help: Shown is what
// a first deployment sets (README's quick start and deployments).
var ServeSections = []clihelp.Section{
	{Name: "Workers and KV events", Shown: "worker workers-file nats no-nats zmq-bind",
		More: "load-poll worker-max-num-seqs worker-max-batched-tokens lora-adapter zmq-max-message-bytes zmq-hold-max-bytes"},
	{Name: "Model", Shown: "model tokenizer block-size",
		More: "tokenizer-url forward-tokens max-model-len kv-bytes-per-token"},
	{Name: "Routing", Shown: "policy preset",
		More: "seed retries stale-limit index jump-stride index-writers approx-ttl"},
	{Name: "Cost", More: "cost overlap-credit prefill-load-scale active-request-weight credit-decay temperature " +
		"imposed-weight pass-model tie-utilization timing-fit predict-ttl predict-active unclamped"},
	{Name: "Experimental", More: "enable-feature peer-hint-min-blocks"},
	{Name: "Busy workers and queue", More: "busy-kv-usage busy-prefill-tokens busy-prefill-fraction queue-threshold queue-policy queue-capacity " +
		"queue-fair tenant-weight queue-max-tenants"},
	{Name: "Session affinity", More: "session-affinity affinity-ttl session-id-max-bytes affinity-max-sessions affinity-max-bytes"},
	{Name: "KV tiers", More: "host-weight disk-weight shared-weight tier-chains onboard-cost"},
	{Name: "Disaggregated prefill and decode", More: "disagg-policy disagg-isl-threshold disagg-load-threshold disagg-transfer-weight prefill-timeout"},
	{Name: "HTTP API", Shown: "addr api-key admin-key drain-timeout",
		More: "max-body-bytes max-prompt-tokens metrics-auth pprof"},
	{Name: "Client bounds", More: "body-timeout idle-timeout max-bodies prompt-bytes-per-token tokenizers tokenize-queue " +
		"tokenize-queue-bytes booking-ttl max-tracked-per-key max-bookings max-booking-bytes stream-write-timeout " +
		"max-answer-bytes max-streams max-stream-buffer-bytes"},
	{Name: "NATS", More: "nats-user nats-password nats-token nats-nkey nats-creds nats-tls-ca nats-tls-cert nats-tls-key " +
		"nats-tls-insecure stream-max-age stream-max-bytes stream-replicas reset-states reset-states-force " +
		"nats-store embedded-nats-port embedded-nats-host embedded-nats-tls-cert embedded-nats-tls-key"},
	{Name: "Replicas", More: "replica-id replica-sync snapshot-interval snapshot-keep snapshot-max-bytes lease-ttl " +
		"sync-heartbeat sync-timeout sync-max-peers"},
	{Name: "Config and logs", Shown: "config print-config log-level",
		More: "decision-log decision-log-sample decision-log-max-bytes decision-log-rate"},
}
