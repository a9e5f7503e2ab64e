package selector

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/kvrouter/kvrouter/kvevents"
)

// args flattens a command's arguments to key -> raw value.
func args(t *testing.T, d *datadriven.TestData) map[string]string {
	t.Helper()
	m := make(map[string]string, len(d.CmdArgs))
	for _, a := range d.CmdArgs {
		m[a.Key] = strings.Join(a.Vals, ",")
	}
	return m
}

func fnum(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func inum(t *testing.T, s string) int {
	t.Helper()
	v, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// worker parses "1" or "1/2" (id/rank).
func worker(t *testing.T, s string) kvevents.Worker {
	t.Helper()
	id, rk, _ := strings.Cut(s, "/")
	w := kvevents.Worker{ID: uint64(inum(t, id))}
	if rk != "" {
		w.Rank = uint32(inum(t, rk))
	}
	return w
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

// configFrom applies script keys to the defaults.
func configFrom(t *testing.T, a map[string]string) Config {
	c := DefaultConfig()
	if name, ok := a["preset"]; ok {
		var err error
		if c, err = Preset(name); err != nil {
			t.Fatal(err)
		}
	}
	for k, v := range a {
		switch k {
		case "preset":
		case "cost":
			m, err := ParseCostModel(v)
			if err != nil {
				t.Fatal(err)
			}
			c.Cost = m
		case "imposed":
			c.ImposedWeight = fnum(t, v)
		case "pass-model":
			c.PassModel = v == "true"
		case "chunk":
			c.Timing.MaxBatchedTokens = inum(t, v)
		case "credit":
			c.OverlapCredit = fnum(t, v)
		case "scale":
			c.PrefillLoadScale = fnum(t, v)
		case "host":
			c.HostWeight = fnum(t, v)
		case "disk":
			c.DiskWeight = fnum(t, v)
		case "decay":
			c.CreditDecay = fnum(t, v)
		case "decay-absolute":
			c.DecayAbsolute = v == "true"
		case "unclamped":
			c.Unclamped = v == "true"
		case "req-weight":
			c.ActiveRequestWeight = fnum(t, v)
		case "temp":
			c.Temperature = fnum(t, v)
		case "busy-kv":
			c.BusyKVUsage = fnum(t, v)
		case "busy-prefill":
			c.BusyPrefillTokens = inum(t, v)
		case "busy-frac":
			c.BusyPrefillFraction = fnum(t, v)
		case "lora-load":
			c.LoRALoad = fnum(t, v)
		case "lora-evict":
			c.LoRAEvict = fnum(t, v)
		default:
			t.Fatalf("unknown config key %q", k)
		}
	}
	return c
}

func TestDataDriven(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		var (
			cfg   = DefaultConfig()
			cands []Candidate
		)
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			a := args(t, d)
			switch d.Cmd {
			case "config":
				cfg = configFrom(t, a)
				if err := cfg.Validate(); err != nil {
					return err.Error() + "\n"
				}
				return ""
			case "candidate":
				c := Candidate{Worker: worker(t, a["w"]), KVUsage: -1, Labels: labels(a["labels"])}
				for k, v := range a {
					switch k {
					case "w", "labels":
					case "dev":
						c.Overlap[kvevents.TierDevice] = inum(t, v)
					case "host":
						c.Overlap[kvevents.TierHostPinned] = inum(t, v)
					case "disk":
						c.Overlap[kvevents.TierDisk] = inum(t, v)
					case "prefill":
						c.ActivePrefillTokens = inum(t, v)
					case "decode":
						c.ActiveDecodeBlocks = inum(t, v)
					case "new":
						c.NewBlocks = inum(t, v)
					case "reqs":
						c.ActiveRequests = inum(t, v)
					case "preqs":
						c.PrefillRequests = inum(t, v)
					case "total":
						c.TotalKVBlocks = inum(t, v)
					case "kv":
						c.KVUsage = fnum(t, v)
					case "max-batched":
						c.MaxNumBatchedTokens = inum(t, v)
					case "max-seqs":
						c.MaxNumSeqs = inum(t, v)
					case "slot-wait":
						c.SlotWait = fnum(t, v)
					case "pass-elapsed":
						c.PassKnown, c.PassElapsed = true, fnum(t, v)
					case "pass-tokens":
						c.PassKnown, c.PassTokens = true, inum(t, v)
					case "loras":
						// a/b/...: the loaded adapters ("-" none); reported.
						c.LoRAKnown = true
						if v != "-" {
							c.LoRAs = strings.Split(v, "/")
						}
					case "max-loras":
						c.MaxLoRAs = inum(t, v)
					case "pass-queue":
						// ago:tokens/ago:tokens..., oldest first.
						for _, e := range strings.Split(v, "/") {
							ago, tok, _ := strings.Cut(e, ":")
							c.PassQueue = append(c.PassQueue, PassArrival{Ago: fnum(t, ago), Tokens: inum(t, tok)})
						}
					default:
						t.Fatalf("unknown candidate key %q", k)
					}
				}
				cands = append(cands, c)
				return ""
			case "reset":
				cands = nil
				return ""
			case "select":
				req := Request{ISL: inum(t, a["isl"]), BlockSize: inum(t, a["block"])}
				seed := uint64(1)
				for k, v := range a {
					switch k {
					case "isl", "block":
					case "seed":
						seed = uint64(inum(t, v))
					case "util":
						req.Utilization = fnum(t, v)
					case "tail":
						req.TailTTFT = fnum(t, v)
					case "allow":
						for _, s := range strings.Split(v, ",") {
							req.Constraints.Allow = append(req.Constraints.Allow, uint64(inum(t, s)))
						}
					case "pin":
						w := worker(t, v)
						req.Constraints.Pin = &w
					case "ranks":
						lo, hi, _ := strings.Cut(v, "-")
						req.Constraints.Ranks = &RankRange{Min: uint32(inum(t, lo)), Max: uint32(inum(t, hi))}
					case "labels":
						req.Constraints.Labels = labels(v)
					case "o-credit":
						req.Overrides.OverlapCredit = Float(fnum(t, v))
					case "o-scale":
						req.Overrides.PrefillLoadScale = Float(fnum(t, v))
					case "o-temp":
						req.Overrides.Temperature = Float(fnum(t, v))
					case "lora":
						req.LoRA = v
					default:
						t.Fatalf("unknown select key %q", k)
					}
				}
				res, err := New(cfg).Select(&req, cands, rand.New(rand.NewPCG(seed, 0)))
				var b strings.Builder
				for _, bd := range res.Breakdowns {
					fmt.Fprintf(&b, "%s\n", bd)
				}
				if err != nil {
					fmt.Fprintf(&b, "error (%d): %v\n", errStatus(err), err)
				} else {
					fmt.Fprintf(&b, "floor=%d chosen: w%s\n", res.FloorTokens, cands[res.Chosen].Worker)
				}
				return b.String()
			case "tailtrack":
				// Feeds a TailTracker the samples in order, printing the
				// estimate after each.
				var tr TailTracker
				var b strings.Builder
				for _, x := range strings.Split(a["samples"], ",") {
					tr.Observe(fnum(t, x), fnum(t, a["q"]))
					fmt.Fprintf(&b, "%s -> %.4f\n", x, tr.Value())
				}
				return b.String()
			case "probs":
				var costs []float64
				for _, s := range strings.Split(a["costs"], ",") {
					costs = append(costs, fnum(t, s))
				}
				p := Probabilities(costs, fnum(t, a["temp"]))
				var parts []string
				for _, x := range p {
					parts = append(parts, strconv.FormatFloat(x, 'f', 5, 64))
				}
				return strings.Join(parts, " ") + "\n"
			}
			t.Fatalf("unknown command %q", d.Cmd)
			return ""
		})
	})
}

// The worked example of testdata/temperature: probabilities computed here
// from the closed form, independently of Select, and then checked against
// sampled frequencies.
func TestTemperatureSampling(t *testing.T) {
	cfg, _ := Preset(PresetDynamo)
	cfg.Temperature = 0.5
	cands := []Candidate{
		{Worker: kvevents.Worker{ID: 1}, Overlap: [4]int{48}, ActivePrefillTokens: 2048, ActiveDecodeBlocks: 100, NewBlocks: 16},
		{Worker: kvevents.Worker{ID: 2}, ActiveDecodeBlocks: 40, NewBlocks: 64},
		{Worker: kvevents.Worker{ID: 3}, Overlap: [4]int{32}, ActivePrefillTokens: 512, ActiveDecodeBlocks: 60, NewBlocks: 32},
	}
	req := Request{ISL: 1024, BlockSize: 16}
	// Costs by hand: w1 (2048+1024)/16-48 + 116 = 260; w2 64 + 104 = 168;
	// w3 (512+1024)/16-32 + 92 = 156. Range 104, T = 0.5.
	w := []float64{math.Exp(-104 / 52.0), math.Exp(-12 / 52.0), 1}
	sum := w[0] + w[1] + w[2]
	want := []float64{w[0] / sum, w[1] / sum, w[2] / sum}

	rng := rand.New(rand.NewPCG(42, 7))
	s := New(cfg)
	const n = 20000
	counts := make([]int, 3)
	for range n {
		res, err := s.Select(&req, cands, rng)
		if err != nil {
			t.Fatal(err)
		}
		counts[res.Chosen]++
		for i, b := range res.Breakdowns {
			if math.Abs(b.Prob-want[i]) > 1e-12 {
				t.Fatalf("breakdown prob of w%d = %v, want %v", i+1, b.Prob, want[i])
			}
		}
	}
	got := Probabilities([]float64{260, 168, 156}, 0.5)
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-12 {
			t.Errorf("Probabilities[%d] = %v, want %v", i, got[i], want[i])
		}
		f := float64(counts[i]) / n
		// 4.5 standard deviations of a binomial proportion.
		tol := 4.5 * math.Sqrt(want[i]*(1-want[i])/n)
		if math.Abs(f-want[i]) > tol {
			t.Errorf("w%d chosen with frequency %.4f, want %.4f ± %.4f", i+1, f, want[i], tol)
		}
	}
}

// Ties at temperature 0 are broken uniformly at random, not by position.
func TestTieBreakUniform(t *testing.T) {
	cands := make([]Candidate, 4)
	for i := range cands {
		cands[i] = Candidate{Worker: kvevents.Worker{ID: uint64(i + 1)}, ActiveDecodeBlocks: 10}
	}
	cands[3].ActiveDecodeBlocks = 11 // not tied
	dyn, _ := Preset(PresetDynamo)
	s := New(dyn)
	rng := rand.New(rand.NewPCG(3, 4))
	req := Request{ISL: 64, BlockSize: 16}
	const n = 9000
	counts := make([]int, 4)
	for range n {
		res, err := s.Select(&req, cands, rng)
		if err != nil {
			t.Fatal(err)
		}
		counts[res.Chosen]++
	}
	if counts[3] != 0 {
		t.Fatalf("costlier candidate chosen %d times", counts[3])
	}
	for i := range 3 {
		f := float64(counts[i]) / n
		if math.Abs(f-1.0/3) > 4.5*math.Sqrt((1.0/3)*(2.0/3)/n) {
			t.Errorf("tied w%d chosen with frequency %.4f, want 1/3", i+1, f)
		}
	}
	// Same seed, same choices: reproducible.
	a, b := rand.New(rand.NewPCG(9, 9)), rand.New(rand.NewPCG(9, 9))
	for range 100 {
		ra, _ := s.Select(&req, cands, a)
		rb, _ := s.Select(&req, cands, b)
		if ra.Chosen != rb.Chosen {
			t.Fatal("same seed gave different choices")
		}
	}
}

func TestFilters(t *testing.T) {
	w := func(id uint64, rk uint32) kvevents.Worker { return kvevents.Worker{ID: id, Rank: rk} }
	pin := w(2, 1)
	base := []Candidate{
		{Worker: w(1, 0), Labels: map[string]string{"gpu": "h100"}, KVUsage: 0.95, MaxNumBatchedTokens: 1000, ActivePrefillTokens: 900},
		{Worker: w(1, 1), Labels: map[string]string{"gpu": "h100"}, KVUsage: 0.5, MaxNumBatchedTokens: 1000, ActivePrefillTokens: 100},
		{Worker: w(2, 0), Labels: map[string]string{"gpu": "a100"}, KVUsage: 0.95, MaxNumBatchedTokens: 1000, ActivePrefillTokens: 100},
		{Worker: w(2, 1), Labels: map[string]string{"gpu": "a100"}, KVUsage: 0.99, MaxNumBatchedTokens: 1000, ActivePrefillTokens: 950},
		{Worker: w(3, 0), KVUsage: -1, ActivePrefillTokens: 5000},
	}
	for _, tc := range []struct {
		name string
		cfg  func(*Config)
		con  Constraints
		want []Reason
	}{
		{name: "none", want: []Reason{0, 0, 0, 0, 0}},
		{name: "allow", con: Constraints{Allow: []uint64{2, 3}}, want: []Reason{ReasonNotAllow, ReasonNotAllow, 0, 0, 0}},
		{name: "pin", con: Constraints{Pin: &pin}, want: []Reason{ReasonNotPinned, ReasonNotPinned, ReasonNotPinned, 0, ReasonNotPinned}},
		{name: "ranks", con: Constraints{Ranks: &RankRange{Min: 1, Max: 1}}, want: []Reason{ReasonRank, 0, ReasonRank, 0, ReasonRank}},
		{name: "labels", con: Constraints{Labels: map[string]string{"gpu": "a100"}}, want: []Reason{ReasonLabel, ReasonLabel, 0, 0, ReasonLabel}},
		{name: "allow before labels", con: Constraints{Allow: []uint64{1}, Labels: map[string]string{"gpu": "a100"}},
			want: []Reason{ReasonLabel, ReasonLabel, ReasonNotAllow, ReasonNotAllow, ReasonNotAllow}},
		// Worker 1 has one rank under 0.9: stays. Worker 2 all over: out. Worker 3 unknown usage: stays.
		{name: "busy kv", cfg: func(c *Config) { c.BusyKVUsage = 0.9 }, want: []Reason{0, 0, ReasonBusy, ReasonBusy, 0}},
		{name: "busy prefill tokens", cfg: func(c *Config) { c.BusyPrefillTokens = 800 }, want: []Reason{0, 0, 0, 0, ReasonBusy}},
		// Fraction: worker 3 has unknown max batched tokens: never over by this rule.
		{name: "busy prefill fraction", cfg: func(c *Config) { c.BusyPrefillFraction = 0.05 }, want: []Reason{ReasonBusy, ReasonBusy, ReasonBusy, ReasonBusy, 0}},
		// Busy looks at all ranks, even ones the constraints dropped.
		{name: "pin busy", cfg: func(c *Config) { c.BusyKVUsage = 0.9 }, con: Constraints{Pin: &pin},
			want: []Reason{ReasonNotPinned, ReasonNotPinned, ReasonNotPinned, ReasonBusy, ReasonNotPinned}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			out := make([]Reason, len(base))
			New(cfg).Eligible(&Request{ISL: 16, BlockSize: 16, Constraints: tc.con}, base, out)
			if !slices.Equal(out, tc.want) {
				t.Errorf("reasons = %v, want %v", out, tc.want)
			}
		})
	}
}

func TestErrors(t *testing.T) {
	s := New(Config{BusyKVUsage: 0.5})
	rng := rand.New(rand.NewPCG(1, 1))
	busy := []Candidate{{Worker: kvevents.Worker{ID: 1}, KVUsage: 0.9}}
	_, err := s.Select(&Request{ISL: 1, BlockSize: 1}, busy, rng)
	if !errors.Is(err, ErrAllOverloaded) {
		t.Errorf("busy: err %v", err)
	}
	_, err = s.Select(&Request{ISL: 1, BlockSize: 1, Constraints: Constraints{Allow: []uint64{7}}}, busy, rng)
	if !errors.Is(err, ErrNoneEligible) {
		t.Errorf("not allowed: err %v", err)
	}
	_, err = s.Select(&Request{ISL: 1, BlockSize: 1}, nil, rng)
	if !errors.Is(err, ErrNoneEligible) {
		t.Errorf("no candidates: err %v", err)
	}
	bad := DefaultConfig()
	bad.OverlapCredit, bad.BusyKVUsage, bad.BusyPrefillTokens = -1, 2, -3
	if err := bad.Validate(); err == nil || strings.Count(err.Error(), "\n") != 2 {
		t.Errorf("Validate should report 3 problems, got %v", err)
	}
}
