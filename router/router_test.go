package router

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/kvrouter/kvrouter/indexer/indexertest"
	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/kvhash"
	"github.com/kvrouter/kvrouter/queue"
	"github.com/kvrouter/kvrouter/selector"
)

var epoch = time.Unix(0, 0)

type targs map[string]string

func parseArgs(d *datadriven.TestData) targs {
	a := targs{}
	for _, x := range d.CmdArgs {
		a[x.Key] = strings.Join(x.Vals, ",")
	}
	return a
}

func (a targs) int(t *testing.T, k string) int {
	t.Helper()
	if a[k] == "" {
		return 0
	}
	n, err := strconv.Atoi(a[k])
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func (a targs) float(t *testing.T, k string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(a[k], 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func (a targs) dur(t *testing.T, k string) time.Duration {
	t.Helper()
	if a[k] == "" {
		return 0
	}
	d, err := time.ParseDuration(a[k])
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func (a targs) now(t *testing.T) time.Time { return epoch.Add(a.dur(t, "t")) }

func parseWorker(t *testing.T, s string) kvevents.Worker {
	t.Helper()
	id, rk, _ := strings.Cut(s, "/")
	n, err := strconv.ParseUint(id, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	w := kvevents.Worker{ID: n}
	if rk != "" {
		r, err := strconv.ParseUint(rk, 10, 32)
		if err != nil {
			t.Fatal(err)
		}
		w.Rank = uint32(r)
	}
	return w
}

// tokens parses "0-11" or "0-7,100-103" (inclusive ranges).
func tokens(t *testing.T, s string) []uint32 {
	t.Helper()
	var out []uint32
	for _, r := range strings.Split(s, ",") {
		lo, hi, ok := strings.Cut(r, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			t.Fatal(err)
		}
		b := a
		if ok {
			if b, err = strconv.Atoi(hi); err != nil {
				t.Fatal(err)
			}
		}
		for i := a; i <= b; i++ {
			out = append(out, uint32(i))
		}
	}
	return out
}

func labels(s string) map[string]string {
	if s == "" {
		return nil
	}
	m := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		k, v, _ := strings.Cut(kv, ":")
		m[k] = v
	}
	return m
}

func newRouter(t *testing.T, a targs) *Router {
	cfg := DefaultConfig()
	if name, ok := a["preset"]; ok {
		var err error
		if cfg, err = Preset(name); err != nil {
			t.Fatal(err)
		}
	}
	seed := uint64(1)
	for k, v := range a {
		switch k {
		case "preset":
		case "predict":
			cfg.Predict.TTL = a.dur(t, k)
		case "active":
			cfg.Predict.Active = a[k] == "true"
		case "mode":
			m, err := ParsePolicy(v)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Policy = m
		case "block":
			cfg.BlockSize = a.int(t, k)
		case "seed":
			seed = uint64(a.int(t, k))
		case "temp":
			cfg.Selector.Temperature = a.float(t, k)
		case "imposed":
			cfg.Selector.ImposedWeight = a.float(t, k)
		case "credit":
			cfg.Selector.OverlapCredit = a.float(t, k)
		case "decay":
			cfg.Selector.CreditDecay = a.float(t, k)
		case "tier-chains":
			cfg.TierChains = true
		case "host-weight":
			cfg.Selector.HostWeight = a.float(t, k)
		case "disk-weight":
			cfg.Selector.DiskWeight = a.float(t, k)
		case "shared-weight":
			cfg.Selector.SharedWeight = a.float(t, k)
		case "onboard":
			cfg.Selector.Onboard = selector.DefaultOnboard()
		case "busy-kv":
			cfg.Selector.BusyKVUsage = a.float(t, k)
		case "busy-prefill":
			cfg.Selector.BusyPrefillTokens = a.int(t, k)
		case "busy-frac":
			cfg.Selector.BusyPrefillFraction = a.float(t, k)
		case "queue":
			cfg.Queue.Threshold = a.float(t, k)
		case "policy":
			p, err := queue.ParsePolicy(v)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Queue.Policy = p
		case "cap":
			cfg.Queue.Capacity = a.int(t, k)
		case "fair":
			cfg.Queue.Fair = v == "true"
		case "weights":
			cfg.Queue.TenantWeights = map[string]float64{}
			for _, kv := range strings.Split(v, ",") {
				name, w, _ := strings.Cut(kv, ":")
				x, err := strconv.ParseFloat(w, 64)
				if err != nil {
					t.Fatal(err)
				}
				cfg.Queue.TenantWeights[name] = x
			}
		case "affinity":
			cfg.Affinity = AffinityConfig{Enabled: true, TTL: a.dur(t, k)}
		case "stale":
			cfg.Loads.StaleAfter = a.dur(t, k)
		case "output":
			cfg.TrackOutputBlocks = v == "true"
		case "approx-ttl":
			cfg.Index.Approx.TTL = a.dur(t, k)
		case "full-only":
			cfg.Index.Groups.FullOnly = true
		case "disagg":
			p, err := ParseDisaggPolicy(v)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Disagg.Policy = p
		case "isl-threshold":
			cfg.Disagg.ISLThreshold = a.int(t, k)
		case "load-threshold":
			cfg.Disagg.LoadThreshold = a.float(t, k)
		case "transfer":
			cfg.Disagg.TransferWeight = a.float(t, k)
		default:
			t.Fatalf("unknown router key %q", k)
		}
	}
	r, err := New(cfg, Options{Rand: rand.New(rand.NewPCG(seed, 0))})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func request(t *testing.T, a targs) Request {
	req := Request{ID: a["id"]}
	for k, v := range a {
		switch k {
		case "id", "t":
		case "tokens":
			req.Tokens = tokens(t, v)
		case "isl":
			req.ISL = a.int(t, k)
		case "lora":
			req.LoRA = v
		case "ns":
			req.Namespace = v
		case "prio":
			req.Priority = a.float(t, k)
		case "session":
			req.Session = v
		case "tenant":
			req.Tenant = v
		case "out":
			req.OutputTokens = a.int(t, k)
		case "allow":
			for _, s := range strings.Split(v, ",") {
				n, _ := strconv.ParseUint(s, 10, 64)
				req.Constraints.Allow = append(req.Constraints.Allow, n)
			}
		case "pin":
			w := parseWorker(t, v)
			req.Constraints.Pin = &w
		case "ranks":
			lo, hi, _ := strings.Cut(v, "-")
			l, _ := strconv.Atoi(lo)
			h, _ := strconv.Atoi(hi)
			req.Constraints.Ranks = &selector.RankRange{Min: uint32(l), Max: uint32(h)}
		case "labels":
			req.Constraints.Labels = labels(v)
		case "o-credit":
			req.Overrides.OverlapCredit = selector.Float(a.float(t, k))
		case "o-temp":
			req.Overrides.Temperature = selector.Float(a.float(t, k))
		case "hop":
			req.Hop = parseHop(t, v)
		default:
			t.Fatalf("unknown route key %q", k)
		}
	}
	return req
}

// storedEvent builds the Stored event of a worker caching tokens from the
// root, engine hash = router sequence hash.
func storedEvent(r *Router, w kvevents.Worker, tier kvevents.Tier, toks []uint32, lora, ns string, id uint64) *kvevents.Event {
	locals := kvhash.LocalHashes(toks, r.cfg.BlockSize, kvhash.Seed(lora, ns))
	seq := kvhash.SeqHashes(locals)
	ev := &kvevents.Event{WorkerID: w.ID, DPRank: w.Rank, Tier: tier, EventID: id, Kind: kvevents.KindStored}
	for i := range locals {
		ev.Blocks = append(ev.Blocks, kvevents.Block{Hash: seq[i], Local: locals[i]})
	}
	return ev
}

func errLine(err error) string {
	return fmt.Sprintf("error (%d): %v\n", errStatus(err), err)
}

func TestDataDriven(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		var r *Router
		var evID uint64
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			a := parseArgs(d)
			switch d.Cmd {
			case "router":
				r = newRouter(t, a)
				return ""
			case "worker":
				err := r.AddWorker(WorkerInfo{ID: uint64(a.int(t, "id")), DPSize: a.int(t, "dp"),
					MaxNumBatchedTokens: a.int(t, "max-batched"), MaxNumSeqs: a.int(t, "max-seqs"), TotalKVBlocks: a.int(t, "kv-blocks"),
					BlockSize: a.int(t, "block"), Labels: labels(a["labels"]), Role: parseRole(t, a["role"])})
				if err != nil {
					return errLine(err)
				}
				return ""
			case "remove-worker":
				ids := r.RemoveWorker(uint64(a.int(t, "id")))
				return fmt.Sprintf("released %v\n%s", ids, r)
			case "metrics":
				if err := r.UpdateWorkerMetrics(parseWorker(t, a["w"]), Metrics{KVUsage: a.float(t, "kv")}); err != nil {
					return errLine(err)
				}
				return ""
			case "cache", "evict":
				tier := kvevents.TierDevice
				if a["tier"] != "" {
					var err error
					if tier, err = kvevents.ParseTier(a["tier"]); err != nil {
						t.Fatal(err)
					}
				}
				evID++
				ev := storedEvent(r, parseWorker(t, a["w"]), tier, tokens(t, a["tokens"]), a["lora"], a["ns"], evID)
				if g := a["group"]; g != "" {
					var err error
					if ev.Group, err = indexertest.ParseGroup(g); err != nil {
						t.Fatal(err)
					}
				}
				if from, to, ok := a.blockRange(t); ok {
					// Only blocks [from, to), chained to block from-1.
					if from > 0 {
						ev.HasParent, ev.Parent = true, ev.Blocks[from-1].Hash
					}
					ev.Blocks = ev.Blocks[from:to]
					if d.Cmd == "evict" {
						ev.Kind, ev.Hashes = kvevents.KindRemoved, nil
						for _, b := range ev.Blocks {
							ev.Hashes = append(ev.Hashes, b.Hash)
						}
						ev.Blocks, ev.HasParent = nil, false
					}
				}
				if err := r.ApplyEvent(ev); err != nil {
					return errLine(err)
				}
				return ""
			case "clear":
				evID++
				w := parseWorker(t, a["w"])
				if err := r.ApplyEvent(&kvevents.Event{WorkerID: w.ID, DPRank: w.Rank, EventID: evID, Kind: kvevents.KindCleared}); err != nil {
					return errLine(err)
				}
				return ""
			case "route":
				dec, err := r.Route(context.Background(), request(t, a), a.now(t))
				if err != nil {
					var b strings.Builder
					for _, c := range dec.Candidates {
						fmt.Fprintf(&b, "  %s\n", c)
					}
					return b.String() + errLine(err)
				}
				return dec.String()
			case "prefill-done", "free", "fail", "touch":
				var err error
				switch d.Cmd {
				case "prefill-done":
					err = r.PrefillDone(a["id"], a.now(t))
				case "free":
					err = r.Free(a["id"], a.now(t))
				case "fail":
					err = r.Fail(a["id"], a.now(t))
				case "touch":
					err = r.Touch(a["id"], a.now(t))
				}
				if err != nil {
					return errLine(err)
				}
				return r.String()
			case "sweep":
				return fmt.Sprintf("swept %v\n%s", r.Sweep(a.now(t)), r)
			case "release":
				var b strings.Builder
				rel := r.Release(a.now(t))
				fmt.Fprintf(&b, "released %d\n", len(rel))
				for _, x := range rel {
					if x.Err != nil {
						b.WriteString(errLine(x.Err))
					} else {
						b.WriteString(x.Decision.String())
					}
				}
				return b.String()
			case "disaggregate":
				req := request(t, a)
				pl, err := r.Disaggregate(&req, a.now(t))
				if err != nil {
					return errLine(err)
				}
				return fmt.Sprintf("%+v\n", pl)
			case "state":
				return r.String()
			case "stats":
				return fmt.Sprintf("%+v\n", r.Stats())
			}
			t.Fatalf("unknown command %q", d.Cmd)
			return ""
		})
	})
}

// blockRange parses blocks=FROM-TO (block indexes, TO exclusive) of the
// cache and evict commands.
func (a targs) blockRange(t *testing.T) (from, to int, ok bool) {
	v, ok := a["blocks"]
	if !ok {
		return 0, 0, false
	}
	if _, err := fmt.Sscanf(v, "%d-%d", &from, &to); err != nil || from < 0 || to < from {
		t.Fatalf("bad blocks=%q", v)
	}
	return from, to, true
}

func parseRole(t *testing.T, s string) Role {
	t.Helper()
	r, err := ParseRole(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func parseHop(t *testing.T, s string) Hop {
	t.Helper()
	h, err := ParseHop(s)
	if err != nil {
		t.Fatal(err)
	}
	return h
}
