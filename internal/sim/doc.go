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
// package doc) kv has the best TTFT p50 and p99 of round-robin, random and
// cache-aware on every trace at every load, and a hit rate of 0.91-0.99
// of the pooled bound; 9 of the 12 strict verdicts (best of all policies,
// kvrouter's approx and load included) pass:
//
//	trace          load  kv p50 / p99      best other p50 / p99 (not kvrouter)  kv hit/pooled  verdict
//	conversation   50%   182 / 1923 ms     cache-aware 228 / 2182 ms            0.941          pass
//	conversation   70%   195 / 1999 ms     cache-aware 263 / 2302 ms            0.926          approx p50 194.9
//	conversation   90%   219 / 2079 ms     cache-aware 340 / 2714 ms            0.914          pass
//	synth          50%   57.3 / 264 ms     cache-aware 61.0 / 380 ms            0.995          pass
//	synth          90%   80.1 / 341 ms     cache-aware 105 / 836 ms             0.994          pass
//	azure-code     50%   533 / 1758 ms     cache-aware 646 / 1838 ms            0.917          pass
//	azure-code     90%   1260 / 2611 ms    cache-aware 1502 / 2756 ms           0.933          pass
//	azure-conv     50%   44.8 / 116 ms     round-robin 45.5 / 129 ms            0.950          load p99 115
//	azure-conv     90%   81.6 / 1450 ms    cache-aware 87.0 / 1719 ms           0.964          approx p99 1319
//
// kv and approx (the same cost, overlap from routing history instead of
// events) decide alike wherever they know the same: kv also credits the
// prefix each worker's active requests hold (router Config.Predict.Active),
// so late events never leave it knowing less, and cost ties go to the
// least utilized rank before any random draw (selector
// Config.TieUtilization). On synth, azure-code and azure-conv at 50/70%
// the two policies' figures are equal (a tie passes): no eviction there
// changes a decision. They part only where evictions tell kv something
// approx does not know: conversation (kv p99 1.5-6.5% better, p50 equal,
// 0.06% worse and 1.3% better) and azure-conv at 90% (kv p99 10% worse). Before those two changes the
// verdicts were 3, 5 and 4 of 12 with seeds 1, 2 and 3, decided by which
// random stream broke the ties better; now 9, 8 and 10. The azure-conv 50%
// p99 goes to the load policy: the imposed term keeps a few requests on
// their cache-holding worker where spreading them would have been
// slightly faster. Credit decay (CreditDecay 1) lowered kv's hit rate on
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
// disaggregated requests (measured before Predict.Active and
// TieUtilization, not re-run since):
//
//	kvrouter sim --trace conversation --limit 1500 --capacity-rate-scale 7.32 \
//	  --loads 0.5,0.7,0.9 --policies kv [--workers 8 | --disagg 4:4|6:2|2:6 \
//	  --disagg-policy always,isl,prefill-load,isl-or-load]
//
//	load  fleet   policy           TTFT p50 / p99 ms  ITL p50 / p99 ms  req/s  prefill hop p50  transfer p50  disagg/agg
//	50%   8 both  kv (aggregated)  186 / 1981         11.3 / 180.9      9.69   -                -             -
//	50%   4:4     always           516 / 2768         17.6 / 37.4       9.45   415              35            1500/0
//	50%   4:4     isl              180 / 2662         19.5 / 96.4       9.55   507              91            619/881
//	50%   4:4     prefill-load     377 / 2663         27.5 / 198.1      9.19   209              44            678/822
//	50%   4:4     isl-or-load      337 / 2747         27.3 / 197.5      9.22   377              97            323/1177
//	50%   6:2     always           668 / 7013         33.9 / 51.7       8.96   218              106           1500/0
//	50%   6:2     isl              9784 / 24325       34.0 / 201.6      7.99   369              146           652/848
//	50%   6:2     prefill-load     31991 / 70197      34.0 / 201.9      6.31   165              150           918/582
//	50%   6:2     isl-or-load      37635 / 83015      34.0 / 201.9      6.01   338              139           447/1053
//	50%   2:6     always           31372 / 61544      8.6 / 24.3        6.97   31280            30            1500/0
//	50%   2:6     isl              137 / 12580        11.1 / 31.3       9.32   8211             88            589/911
//	50%   2:6     prefill-load     261 / 2276         15.2 / 185.2      9.49   285              34            459/1041
//	50%   2:6     isl-or-load      193 / 2303         14.8 / 184.8      9.47   393              89            224/1276
//	70%   8 both  kv (aggregated)  203 / 2034         19.2 / 191.0      12.46  -                -             -
//	70%   4:4     always           1140 / 3383        26.0 / 46.0       12.25  1015             42            1500/0
//	70%   4:4     isl              195 / 3024         28.3 / 150.8      12.10  676              93            615/885
//	70%   4:4     prefill-load     6531 / 18490       34.0 / 201.7      10.59  209              99            530/970
//	70%   4:4     isl-or-load      5821 / 16719       34.0 / 201.9      10.58  388              135           263/1237
//	70%   6:2     always           16707 / 38327      34.0 / 51.9       9.10   259              177           1500/0
//	70%   6:2     isl              27184 / 72117      34.0 / 201.6      7.63   389              148           664/836
//	70%   6:2     prefill-load     61394 / 130690     34.0 / 202.0      5.75   165              150           739/761
//	70%   6:2     isl-or-load      62506 / 143217     34.0 / 201.9      5.56   361              136           382/1118
//	70%   2:6     always           50719 / 101876     8.7 / 24.0        6.93   50653            30            1500/0
//	70%   2:6     isl              144 / 55472        11.9 / 40.4       9.36   27985            85            609/891
//	70%   2:6     prefill-load     318 / 2360         27.1 / 197.6      12.30  280              37            377/1123
//	70%   2:6     isl-or-load      238 / 2441         25.6 / 197.1      12.17  388              95            193/1307
//	90%   8 both  kv (aggregated)  296 / 2104         28.2 / 199.6      15.06  -                -             -
//	90%   4:4     always           7509 / 16616       27.6 / 47.1       12.85  7325             42            1500/0
//	90%   4:4     isl              211 / 4335         32.9 / 175.2      14.61  1613             96            616/884
//	90%   4:4     prefill-load     17579 / 42404      34.0 / 201.9      10.22  209              94            428/1072
//	90%   4:4     isl-or-load      18004 / 44545      34.0 / 201.7      10.03  384              141           210/1290
//	90%   6:2     always           24089 / 68031      34.0 / 52.0       9.19   507              167           1500/0
//	90%   6:2     isl              40681 / 89081      34.0 / 201.7      7.71   551              154           656/844
//	90%   6:2     prefill-load     77306 / 163690     34.0 / 201.9      5.66   173              137           625/875
//	90%   6:2     isl-or-load      78550 / 167878     34.0 / 201.9      5.42   366              141           296/1204
//	90%   2:6     always           62472 / 123427     8.8 / 24.0        6.97   62414            29            1500/0
//	90%   2:6     isl              145 / 76374        12.9 / 51.2       8.96   37483            83            618/882
//	90%   2:6     prefill-load     625 / 3990         33.9 / 201.6      14.12  272              56            320/1180
//	90%   2:6     isl-or-load      597 / 3916         33.7 / 201.6      13.54  388              97            172/1328
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
