// Package sim is kvrouter's deterministic fleet simulator (`kvrouter sim`):
// a discrete-event simulation of W mocker engines on simulated time behind a
// routing policy, driven by a Mooncake trace, that compares policies side by
// side on the same requests.
//
// # Event loop
//
// One binary heap of events ordered by (time, sequence number) drives each
// policy's simulation on one goroutine:
//
//   - arrival: every request whose (scaled) timestamp has come is routed by
//     the policy and added to its engine's waiting queue; an idle engine
//     starts a forward pass at once.
//   - pass end: mocker.Engine.Step ran the pass when it started (its
//     modeled duration advances that engine's clock); at its end the loop
//     tells the policy about first tokens (router PrefillDone) and finished
//     requests (router Free), schedules the pass's KV events for delivery
//     to the router's index EventDelay later, reports the engine's KV usage
//     (for busy thresholds, MetricsDelay later), and starts the next pass
//     if the engine has work.
//   - delivery: KV events reach the kv policy's index (router.ApplyEvent).
//
// Nothing reads the wall clock or a global random source, and ties are
// broken by the sequence number, so a Config always produces the same
// Report (wall-time fields aside). Policies share nothing mutable and run
// concurrently (Config.Parallel) without changing any figure.
//
// # Policies
//
// kv, approx, load, round-robin and random are the router package's
// policies (router.ParsePolicy: the names serve and replay use, the
// baselines round-robin and random included) with Config.Router's knobs;
// cache-aware, a simulator-only baseline, follows the documented
// behaviour of SGLang router's cache_aware policy (CacheAwareConfig).
//
// # Bounds
//
// Two block hit rates frame the policies' (Bounds): the trace's
// infinite-cache hit rate at the simulation block size, and the hit rate of
// one LRU cache as large as the whole fleet's KV blocks (the "pooled-cache
// bound") replaying the same request order. A policy's hit rate counts the
// prompt blocks its engines found cached at admission.
//
// # Defaults and why
//
//   - BlockSize 64: the mocker's and vLLM's default. The trace's 512-token
//     blocks become 8 router blocks each, so every prefix shared in the
//     trace is shared exactly in the simulation (512 would also work but
//     is no engine's real block size).
//   - Engine: mocker.DefaultConfig (16384 blocks of 64 tokens = 1 Mi tokens
//     of KV per worker, 256 max sequences, 8192 batched tokens, prefix
//     caching on, watermark 0.01; DESIGN.md §6), with SpeedupRatio 0 so
//     simulated time advances by the unscaled model time.
//   - Workers 8, RateScale 1 (the trace's own timing, 3.4 req/s, about 15%
//     of an 8-worker fleet's capacity), EventDelay 10 ms, Seed 1.
//
// # Capacity
//
// FindCapacity measures a policy's saturated throughput (the whole trace
// offered at once, completions counted between their 10th and 90th
// percentile); `kvrouter sim --loads 0.5,0.7,0.9` runs the policy table at
// those fractions of it (capacity of round-robin by default,
// --capacity-policy to change).
//
// # Findings (shipped traces, 8 workers, first 4000 requests each)
//
// `kvrouter sim --workers 8 --loads 0.5,0.7,0.9 --limit 4000` (verdicts:
// internal/sim.Judge). With Dynamo's cost (--preset dynamo) kv reaches
// only 0.60-0.68 of the pooled-cache bound on the conversation trace
// (0.59-0.78 on azure) and loses TTFT p50 to cache-aware at every load
// there (328/368/407 ms vs 228/263/340 ms): its decode term counts a request's whole KV footprint
// (~190 blocks for a 12k-token prompt), so one more active request
// outweighs a 190-block hit, although a decode block costs the engine far
// less time than a prefill block. With the default time cost (selector
// package doc, its pass model included) kv has the best TTFT p50 and p99
// of round-robin, random and cache-aware on every trace at every load,
// and a hit rate of 0.923-0.995 of the pooled bound; all 12 strict
// verdicts (best of all policies, kvrouter's approx and load included)
// pass, at seeds 1, 2 and 3 alike:
//
//	trace          load  kv p50 / p99      best other p50 / p99 (not kvrouter)  kv hit/pooled  verdict
//	conversation   50%   184 / 1907 ms     cache-aware 228 / 2182 ms            0.956          pass
//	conversation   70%   196 / 2008 ms     cache-aware 263 / 2302 ms            0.930          pass
//	conversation   90%   245 / 2137 ms     cache-aware 340 / 2714 ms            0.931          pass
//	synth          50%   57.9 / 252 ms     cache-aware 61.0 / 380 ms            0.995          pass
//	synth          70%   68.5 / 326 ms     cache-aware 77.7 / 545 ms            0.995          pass
//	synth          90%   82.0 / 318 ms     cache-aware 105 / 836 ms             0.993          pass
//	azure-code     50%   543 / 1720 ms     cache-aware 646 / 1838 ms            0.928          pass
//	azure-code     70%   892 / 2184 ms     cache-aware 1038 / 2380 ms           0.925          pass
//	azure-code     90%   1295 / 2595 ms    cache-aware 1502 / 2756 ms           0.928          pass
//	azure-conv     50%   44.8 / 117 ms     round-robin 45.5 / 129 ms            0.949          pass
//	azure-conv     70%   52.6 / 134 ms     round-robin 59.6 / 193 ms            0.956          pass
//	azure-conv     90%   69.4 / 1534 ms    cache-aware 87.0 / 1719 ms           0.923          pass
//
// kv and approx (the same cost, overlap from routing history instead of
// events) part only where they know different things: kv also credits the
// prefix each worker's active requests hold (router Config.Predict.Active),
// so late events never leave it knowing less, and cost ties go to the
// least utilized rank before any random draw (selector
// Config.TieUtilization). The random draws left are an idle fleet's first
// decisions, among workers nobody has used: they only relabel equivalent
// workers, so --seed moves few figures and `--seeds` alone measures little
// noise; --load-jitter runs the seeds at rates 0.1% apart instead
// (cmd/kvrouter sim help). Before those two changes the verdicts were 3, 5
// and 4 of 12 with seeds 1, 2 and 3; then 9, 8 and 10; with the pass
// model 11, 11 and 11; with the pass model and ImposedWeight 1 (the
// default since; it was 2) 12, 12 and 12. `kvrouter sim --workers 8
// --loads 0.5,0.7,0.9 --limit 4000 --seeds 1,2,3 --load-jitter 0.001`:
// 10 cells pass on the means and 2 lose within noise (conversation 70% p50
// kv 0.08 ms above approx, worse at 2 of 3 seeds; azure-conv 50% p99 kv
// 0.11 ms above load, worse at 1 of 3), none fails; strict verdicts 9, 12
// and 9 of 12. With weight 2 the same run gave 9 pass, 2 noise, 1 fail
// (azure-conv 50% p99 125 [124, 127] vs load 120 [118, 123] ms), strict
// 8, 11 and 10; before the pass model 8 pass, 2 noise, 2 fail, strict 9,
// 8 and 9.
//
// The imposed weight on the pass model (seed 1, `--limit 4000`, all 12
// cells): 1 passes 12, 1.5 passes 10, 2 passes 11, 3 passes 9. A higher
// weight buys hit rate (azure-conv 50% hit / pooled 0.95 / 0.97 / 0.98 /
// 0.99 at 1 / 1.5 / 2 / 3) with tail latency (its p99 117 / 125 / 124 /
// 126 ms; load 120). Weight 1 is also the unfudged M/M/1 price of the
// request's work (selector package doc), so the default needs no fitted
// constant; its lowest hit / pooled is 0.923 (azure-conv 90%).
//
// The pass model (selector Config.PassModel, loads.Pass). The
// pass-agnostic queue charged a busy worker its whole pass in flight and
// ran the pending prefill in passes of its own before the request's,
// while the engine (mocker, vLLM v1) starts the request's prefill in the
// first pass after the one in flight, sharing it with the pending prefill
// up to the token budget. Measured against each request's actual TTFT
// (per-request traces, kv at conversation 50%) the old queue erred by
// -32 / +5 / +154 ms (p1 / p50 / p99: it overestimates where prefill is
// queued and misses later arrivals joining the pass; with the pass model
// below -29 / +5 / +457 ms: closer where prefill is queued, a longer tail
// of underestimates). With the engine's
// exact pass in flight and pending tokens read from the simulator (an
// oracle no router has) kv's p50 fell on azure-conv (44.8 / 56.1 / 81.6
// -> 42.8 / 49.9 / 70.8 ms at 50/70/90%) and azure-code, and 9 of 12
// verdicts passed. The router's own estimate dates the pass from first
// tokens and rolls passes forward with the timing model; two things made
// it fit: (1) when the model runs past every pending token with no first
// token come, the engine computes more than the router booked (a
// predicted hit it missed, a prompt larger than the credit says): assume
// it cycles through them again rather than that the worker is free
// (without this the prediction error was +86 ms at p50 and conversation
// 50% p50 268 ms); (2) at the engine's sequence cap (max_num_seqs 256)
// waiting requests are not admitted at all, whatever the pass budget: on
// synth at 90% the worst requests waited behind 256 running ones (their
// TTFT 0.8-1.3 s, predicted 0.3-0.5), so a candidate at its cap keeps
// the pass-agnostic queue (`--trace synth --rate-scale 17.66`: kv p99
// 712 -> 572 ms), after the wait for a slot, estimated from the gaps
// between the worker's completions (router finish.go: 572 -> 376 ms; the
// pass-agnostic queue without it: 345 ms). What it costs: kv's own synth
// p99 (257 / 293 / 356 -> 300 / 348 / 395 ms, means over the jittered
// seeds), conversation 90% p50 (220 -> 233 ms) and azure-conv 90% p99
// (1315 -> 1367 ms, hit / pooled 0.956 -> 0.954) are worse: the old
// model's overestimate kept work away from busy workers, which the new
// one's underestimated tail (later arrivals joining a pass) does not.
// What it buys:
// azure-conv p50 56.2 / 82.5 -> 53.0 / 71.2 ms at 70/90%, azure-code p99
// 2-3% better, hit / pooled up on conversation, azure-code and azure-conv
// at 50/70% (0.92-0.96 -> 0.95-0.98). --preset dynamo is unchanged (block cost).
//
// The cell that failed at weight 2: azure-conv 50%, p99 kv 124 vs load
// 120 ms at every seed. Both lose tail to the estimated pass model (kv 116 -> 124, load
// 115 -> 120 ms; with the oracle, kv 116 and load 103 ms), and the imposed term
// still trades tail latency for the hit rate the verdict asks for: with
// the pass-agnostic queue, --imposed-weight 0 gave kv 108 ms, the best of
// all, at 0.77 of pooled (failing the 0.9 bar); weight 1: 115 ms, 0.90; 2
// (default): 116, 0.95. Its tail holds requests sent to a busy worker for
// a small hit (isl 1324, 1024 cached, 1235 tokens queued: 16 ms of compute
// saved, valued at 63 ms at U = 0.52) and requests whose last pass a later
// arrival filled (isl 1007, predicted 83 ms, 194 ms actual: a 6472-token
// request arrived 2 ms later for an 8-block hit and the engine batched
// 7185 of its tokens with it). What would fix it: modeling the batch
// externality.
//
// Tried and not kept (all 12 cells, seed 1, kv/approx/load; each derived
// from the timing model, none tuned), on the pass-agnostic queue: the M/M/1
// marginal cost mine*(1/(1-U)^2 - 1) in place of ImposedWeight*mine/(1-U)
// (5 of 12: with U the fraction of ranks in prefill, 0.06 at conversation
// 50% and 0.29 at 90%, hit/pooled falls to 0.86-0.90 on conversation and
// azure-code; synth 50% p99 264 -> 191 ms); charging half the pass in
// flight, prefill or decode (10 of 12, but kv's own synth 70/90% p99
// 277/341 -> 344/369 ms, azure-conv 50% 116 -> 122 ms); charging the
// delay a request's tokens add to the requests waiting on the worker,
// (prefill requests - 1) * marginal pass time (10 of 12; azure-code p50
// 15-28% better but p99 16-24% worse, azure-conv 90% p99 1450 -> 1903 ms),
// and its refinement to the requests of the last partial pass (10 of 12;
// within ±2.4% except azure-conv 90% p99 1450 -> 1790 ms). Each helps the
// load policy as much as kv (azure-conv 50%: load p99 115 -> 110 ms). On
// the pass model (before the sequence-cap rule): charging the delay the
// request's first chunk adds to the request finishing in the pass it
// joins, PT(r + x) - PT(r) (9 of 12: synth 90% p99 580 -> 491 ms, but
// azure-conv 50/70% p99 124/137 -> 131/144 ms, failing to load); falling
// back to the pass-agnostic queue where the model ran past the pending
// tokens instead of cycling (synth 90% p99 712 -> 899 ms).
//
// Credit decay (CreditDecay 1) lowered kv's hit rate on
// every trace (conversation 90%: 0.83 vs 0.94) and stays off. Charging
// expected output blocks (Router.TrackOutputBlocks) with the estimate a
// live router has, the running average of completed requests' outputs
// (router.OutputAverage, window OutputWindow; ExactOutput uses the trace's
// true lengths instead), moved kv's TTFT within ±3% either way (--limit
// 2000, conversation and synth, loads 0.5/0.7/0.9: e.g. conversation 90%
// p50 264 -> 256 ms, synth 50% p99 212 -> 225 ms; conversation 90%,
// --limit 6000: 215/2052 ms -> 215/2031 ms), the oracle no better, so it
// stays off: the decode load of a few hundred output tokens is a small
// share of a pass next to the prefill queued ahead.
//
// # Disaggregation (DESIGN.md §10)
//
// --disagg P:D makes the first P workers prefill and the other D decode
// workers and runs every router policy once per --disagg-policy (rows
// "kv+always", ...; disagg.go). Conversation trace, first 1500 requests,
// 8 workers, loads as fractions of the aggregated 8-worker round-robin
// capacity (21.5 req/s), isl threshold 8192, load threshold 2, KV link 25
// GB/s + 1 ms (8 MiB blocks); prefill hop and transfer are p50 ms of the
// disaggregated requests (with the default Predict.Active and
// TieUtilization):
//
//	kvrouter sim --trace conversation --limit 1500 --capacity-rate-scale 7.32 \
//	  --loads 0.5,0.7,0.9 --policies kv [--workers 8 | --disagg 4:4|6:2|2:6 \
//	  --disagg-policy always,isl,prefill-load,isl-or-load]
//
//	load  fleet   policy           TTFT p50 / p99 ms  ITL p50 / p99 ms  req/s  prefill hop p50  transfer p50  disagg/agg
//	50%   8 both  kv (aggregated)  186 / 1981         11.3 / 180.9      9.69   -                -             -
//	50%   4:4     always           506 / 2753         17.8 / 37.1       9.27   394              35            1500/0
//	50%   4:4     isl              176 / 2595         19.3 / 96.0       9.42   507              91            624/876
//	50%   4:4     prefill-load     369 / 2637         27.7 / 198.1      9.05   209              44            664/836
//	50%   4:4     isl-or-load      339 / 2837         27.4 / 197.5      9.17   371              97            325/1175
//	50%   6:2     always           673 / 4829         33.9 / 51.7       9.01   215              106           1500/0
//	50%   6:2     isl              10082 / 22707      34.0 / 201.7      8.10   367              146           654/846
//	50%   6:2     prefill-load     31927 / 75104      34.0 / 201.9      6.46   164              140           942/558
//	50%   6:2     isl-or-load      37451 / 75947      34.0 / 201.7      6.20   362              132           437/1063
//	50%   2:6     always           29730 / 60496      8.8 / 24.2        7.18   29563            30            1500/0
//	50%   2:6     isl              136 / 13029        11.2 / 31.5       9.30   8444             88            590/910
//	50%   2:6     prefill-load     261 / 2276         15.2 / 185.2      9.49   285              34            459/1041
//	50%   2:6     isl-or-load      193 / 2303         14.8 / 184.8      9.47   393              89            224/1276
//	70%   8 both  kv (aggregated)  203 / 2034         19.2 / 191.0      12.46  -                -             -
//	70%   4:4     always           1160 / 3340        25.7 / 45.9       12.23  1027             41            1500/0
//	70%   4:4     isl              192 / 2860         28.2 / 149.0      12.30  676              92            620/880
//	70%   4:4     prefill-load     6027 / 14948       34.0 / 201.7      10.90  210              92            551/949
//	70%   4:4     isl-or-load      5174 / 15227       34.0 / 201.7      10.98  378              131           266/1234
//	70%   6:2     always           16105 / 43874      34.0 / 51.9       8.70   255              167           1500/0
//	70%   6:2     isl              29896 / 69826      34.0 / 201.7      8.03   391              152           654/846
//	70%   6:2     prefill-load     58843 / 126330     34.0 / 201.9      5.92   164              146           762/738
//	70%   6:2     isl-or-load      61394 / 130196     34.0 / 201.9      5.77   363              136           368/1132
//	70%   2:6     always           48583 / 100387     8.7 / 24.2        7.21   48377            30            1500/0
//	70%   2:6     isl              145 / 50358        12.0 / 41.1       9.62   25618            86            608/892
//	70%   2:6     prefill-load     317 / 2329         26.6 / 197.6      12.31  285              37            377/1123
//	70%   2:6     isl-or-load      226 / 2422         25.9 / 197.9      12.26  390              95            191/1309
//	90%   8 both  kv (aggregated)  296 / 2104         28.2 / 199.6      15.06  -                -             -
//	90%   4:4     always           7252 / 15330       28.0 / 47.5       12.80  7118             43            1500/0
//	90%   4:4     isl              205 / 4043         33.0 / 173.8      14.20  1546             96            617/883
//	90%   4:4     prefill-load     16928 / 37619      34.0 / 201.7      10.63  211              83            429/1071
//	90%   4:4     isl-or-load      16128 / 40415      34.0 / 201.7      10.12  380              123           214/1286
//	90%   6:2     always           25909 / 60043      34.0 / 51.9       9.53   471              187           1500/0
//	90%   6:2     isl              35655 / 87626      34.0 / 201.7      7.98   535              169           651/849
//	90%   6:2     prefill-load     75749 / 158447     34.0 / 201.9      5.67   184              148           656/844
//	90%   6:2     isl-or-load      78536 / 160883     34.0 / 201.9      5.61   360              131           299/1201
//	90%   2:6     always           59646 / 121125     8.9 / 24.4        7.22   59500            30            1500/0
//	90%   2:6     isl              146 / 71574        13.1 / 53.4       9.10   36469            83            620/880
//	90%   2:6     prefill-load     615 / 4007         33.8 / 201.6      14.36  280              59            320/1180
//	90%   2:6     isl-or-load      555 / 3940         33.7 / 201.6      14.48  392              99            167/1333
//
// Disaggregation wins ITL (p99 24-52 ms with always, against 181-200 ms
// aggregated: no prefill chunk shares a decode pass) and loses TTFT and
// throughput at equal worker count on this prefill-heavy trace: one pool
// saturates (prefill at 4:4 and 2:6, decode at 6:2) and every prompt pays
// its KV pull. isl on 4:4 matches the aggregated fleet's TTFT p50 (follow-up
// turns stay on the decode worker holding their history), with a worse p99
// and better ITL p99; it is router.DefaultDisaggPolicy. The load rule
// (prefill-load, isl-or-load) rescues the prefill-starved 2:6 fleet and
// hurts the others: it moves long prompts onto the decode pool.
//
// Run and FindCapacity are safe for concurrent use; they share nothing.
package sim
