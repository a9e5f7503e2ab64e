package trace

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// Prefixes builds Mooncake hash ids for synthesized prompts: shared system
// prompts and conversations whose every turn extends the previous turn's
// context (its prompt and its answer). Ids are handed out in order of first
// use, each naming one TraceBlockTokens block with its whole prefix, so the
// ids of every prompt form a prefix tree as in the Mooncake traces.
//
// A conversation's complete context blocks keep their ids from turn to
// turn; the trailing partial block of a prompt gets a fresh id every time
// (its content differs once the context grows), as a real block hash would.
type Prefixes struct {
	next    uint64
	systems [][]uint64 // system prompt ids, created on first use
}

// NewPrefixes returns a builder with system prompts of systemBlocks blocks
// each (n prompts).
func NewPrefixes(n, systemBlocks int) *Prefixes {
	p := &Prefixes{systems: make([][]uint64, n)}
	for i := range p.systems {
		p.systems[i] = make([]uint64, 0, systemBlocks)
		for range systemBlocks {
			p.systems[i] = append(p.systems[i], p.id())
		}
	}
	return p
}

func (p *Prefixes) id() uint64 {
	id := p.next
	p.next++
	return id
}

// Conversation is one context growing turn by turn.
type Conversation struct {
	ids    []uint64 // ids of the complete blocks of the context
	tokens int      // context length in tokens
}

// Start begins a conversation on system prompt s (-1: none), truncated to
// at most maxTokens tokens of it.
func (p *Prefixes) Start(s, maxTokens int) *Conversation {
	c := &Conversation{}
	if s >= 0 && s < len(p.systems) {
		k := min(len(p.systems[s]), max(0, maxTokens)/TraceBlockTokens)
		c.ids = append(c.ids, p.systems[s][:k]...)
		c.tokens = k * TraceBlockTokens
	}
	return c
}

// Tokens is the conversation's context length.
func (c *Conversation) Tokens() int { return c.tokens }

// Prompt extends the context to total tokens (new user tokens after the
// context; total below the context length keeps the context) and returns
// the prompt's hash ids (ceil(total/512) of them) in a new slice.
func (p *Prefixes) Prompt(c *Conversation, total int) []uint64 {
	total = max(total, c.tokens, 1)
	c.extend(p, total)
	ids := slices.Clone(c.ids)
	if total%TraceBlockTokens != 0 {
		ids = append(ids, p.id())
	}
	return ids
}

// Answer appends n generated tokens to the context.
func (p *Prefixes) Answer(c *Conversation, n int) { c.extend(p, c.tokens+max(0, n)) }

func (c *Conversation) extend(p *Prefixes, total int) {
	for len(c.ids) < total/TraceBlockTokens {
		c.ids = append(c.ids, p.id())
	}
	c.tokens = max(c.tokens, total)
}

// SynthConfig parameterizes Synth (`kvrouter-study trace synth`). Lengths are
// log-normal: exp(N(ln(Median), Sigma²)), clamped to [1, Max].
type SynthConfig struct {
	// Requests is the number of requests. Default 4000.
	Requests int
	// Rate is the mean arrival rate of new conversations, per second.
	// Default 2.
	Rate float64
	// Burstiness is the coefficient of variation of the gaps between new
	// conversations (gamma distributed with shape 1/Burstiness²): 1 is a
	// Poisson process, above 1 bursty, below 1 regular. Default 2.
	Burstiness float64
	// Systems is the number of distinct shared system prompts, drawn
	// Zipf(ZipfS) by popularity. Default 16.
	Systems int
	// ZipfS is the Zipf exponent of system-prompt popularity (> 1).
	// Default 1.2.
	ZipfS float64
	// SystemTokens is each system prompt's length (rounded down to whole
	// 512-token blocks). Default 4096.
	SystemTokens int
	// PrefixShare is the fraction of conversations that start with a
	// shared system prompt (the others start from nothing). Default 0.7.
	PrefixShare float64
	// MeanTurns is the mean number of turns of a conversation (geometric,
	// at least 1). Default 3.
	MeanTurns float64
	// ThinkTime is the mean gap between a turn's arrival and the next
	// turn's (exponential). Default 20 s.
	ThinkTime time.Duration
	// PromptMedian, PromptSigma, PromptMax: new user tokens per turn.
	// Defaults 600, 1.0, 16384.
	PromptMedian float64
	PromptSigma  float64
	PromptMax    int
	// OutputMedian, OutputSigma, OutputMax: generated tokens per turn.
	// Defaults 250, 0.8, 2000.
	OutputMedian float64
	OutputSigma  float64
	OutputMax    int
	// ContextMax caps a prompt (system + history + new tokens); a
	// conversation that would exceed it ends. Default 65536.
	ContextMax int
}

// DefaultSynthConfig returns the defaults documented on SynthConfig: a
// chat-assistant mix whose reuse comes mostly from shared system prompts
// and short multi-turn histories (unlike the Mooncake conversation trace,
// whose reuse is long single-user histories).
func DefaultSynthConfig() SynthConfig {
	return SynthConfig{
		Requests: 4000, Rate: 2, Burstiness: 2,
		Systems: 16, ZipfS: 1.2, SystemTokens: 4096, PrefixShare: 0.7,
		MeanTurns: 3, ThinkTime: 20 * time.Second,
		PromptMedian: 600, PromptSigma: 1.0, PromptMax: 16384,
		OutputMedian: 250, OutputSigma: 0.8, OutputMax: 2000,
		ContextMax: 65536,
	}
}

// Validate reports every problem with c.
func (c SynthConfig) Validate() error {
	var errs []error
	pos := func(name string, v float64) {
		if !(v > 0) || math.IsInf(v, 0) {
			errs = append(errs, fmt.Errorf("trace: synth %s = %v must be finite and > 0", name, v))
		}
	}
	pos("requests", float64(c.Requests))
	pos("rate", c.Rate)
	pos("burstiness", c.Burstiness)
	pos("systems", float64(c.Systems))
	pos("mean turns", c.MeanTurns)
	pos("prompt median", c.PromptMedian)
	pos("output median", c.OutputMedian)
	pos("prompt max", float64(c.PromptMax))
	pos("output max", float64(c.OutputMax))
	pos("context max", float64(c.ContextMax))
	if !(c.ZipfS > 1) {
		errs = append(errs, fmt.Errorf("trace: synth zipf exponent %v must be > 1", c.ZipfS))
	}
	if c.MeanTurns < 1 {
		errs = append(errs, fmt.Errorf("trace: synth mean turns %v must be >= 1", c.MeanTurns))
	}
	if !(c.PrefixShare >= 0 && c.PrefixShare <= 1) {
		errs = append(errs, fmt.Errorf("trace: synth prefix share %v must be in [0, 1]", c.PrefixShare))
	}
	if c.SystemTokens < 0 || c.ThinkTime < 0 || c.PromptSigma < 0 || c.OutputSigma < 0 {
		errs = append(errs, errors.New("trace: synth system tokens, think time and sigmas must be >= 0"))
	}
	return errors.Join(errs...)
}

func lognormal(rng *rand.Rand, median, sigma float64, hi int) int {
	v := math.Exp(math.Log(median) + sigma*rng.NormFloat64())
	return int(min(max(math.Round(v), 1), float64(hi)))
}

// gammaGap draws a gap of mean `mean` and coefficient of variation cv
// (gamma with shape 1/cv²; Marsaglia-Tsang, boosted for shape < 1).
func gammaGap(rng *rand.Rand, mean, cv float64) float64 {
	k := 1 / (cv * cv)
	boost := 1.0
	if k < 1 {
		boost = math.Pow(rng.Float64(), 1/k)
		k++
	}
	d := k - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := rng.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := rng.Float64()
		if math.Log(u) < 0.5*x*x+d-d*v+d*math.Log(v) {
			return boost * d * v * mean / (1 / (cv * cv))
		}
	}
}

// Synth generates a trace of conversations (see SynthConfig): new
// conversations arrive as a gamma renewal process; a conversation starts
// with a shared system prompt (probability PrefixShare, Zipf-popular) or
// none, then each turn's prompt is the whole context so far (system
// prompt, earlier prompts and answers) plus new user tokens, and the next
// turn arrives an exponential think time later. Records are sorted by
// timestamp (ties in generation order). The same cfg and rng seed give the
// same trace.
func Synth(cfg SynthConfig, rng *rand.Rand) ([]Record, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	px := NewPrefixes(cfg.Systems, cfg.SystemTokens/TraceBlockTokens)
	zipf := rand.NewZipf(rng, cfg.ZipfS, 1, uint64(cfg.Systems-1))
	out := make([]Record, 0, cfg.Requests)
	var start float64 // seconds
	pTurn := 1 - 1/cfg.MeanTurns
	for len(out) < cfg.Requests {
		start += gammaGap(rng, 1/cfg.Rate, cfg.Burstiness)
		sys := -1
		if rng.Float64() < cfg.PrefixShare {
			sys = int(zipf.Uint64())
		}
		conv := px.Start(sys, cfg.ContextMax)
		at := start
		for len(out) < cfg.Requests {
			total := conv.Tokens() + lognormal(rng, cfg.PromptMedian, cfg.PromptSigma, cfg.PromptMax)
			if total > cfg.ContextMax {
				break
			}
			outLen := lognormal(rng, cfg.OutputMedian, cfg.OutputSigma, cfg.OutputMax)
			out = append(out, Record{
				Timestamp:    time.Duration(math.Round(at*1000)) * time.Millisecond,
				InputLength:  total,
				OutputLength: outLen,
				HashIDs:      px.Prompt(conv, total),
			})
			px.Answer(conv, outLen)
			if rng.Float64() >= pTurn {
				break
			}
			at += rng.ExpFloat64() * cfg.ThinkTime.Seconds()
		}
	}
	slices.SortStableFunc(out, func(a, b Record) int { return int(a.Timestamp - b.Timestamp) })
	return out, nil
}

// PrefixModel synthesizes prefixes for traces that carry only arrival
// times and lengths (the Azure LLM inference traces): each request either
// continues a recent conversation or starts a new one.
//
//   - Continue (probability Continue): among the last Window open
//     conversations, the most recent one whose context (prompt + answer so
//     far) is no longer than this request's prompt; the prompt is that
//     context plus new tokens. When none fits, the request starts a new
//     conversation.
//   - New: with probability PrefixShare the prompt begins with one of
//     Systems shared system prompts (Zipf(ZipfS) popularity) of
//     SystemTokens tokens (truncated to the prompt), then new tokens.
//
// The request's answer (output length) then joins its conversation's
// context. Lengths and timestamps are the trace's own.
type PrefixModel struct {
	// Continue is the probability that a request continues a conversation.
	// Default 0.5.
	Continue float64
	// Window is how many recent conversations a continuation considers.
	// Default 64.
	Window int
	// Systems, ZipfS, SystemTokens, PrefixShare: as in SynthConfig.
	// Defaults 16, 1.2, 1024, 0.5.
	Systems      int
	ZipfS        float64
	SystemTokens int
	PrefixShare  float64
}

// DefaultPrefixModel returns the defaults documented on PrefixModel.
func DefaultPrefixModel() PrefixModel {
	return PrefixModel{Continue: 0.5, Window: 64, Systems: 16, ZipfS: 1.2, SystemTokens: 1024, PrefixShare: 0.5}
}

// Validate reports every problem with m.
func (m PrefixModel) Validate() error {
	var errs []error
	if !(m.Continue >= 0 && m.Continue <= 1) || !(m.PrefixShare >= 0 && m.PrefixShare <= 1) {
		errs = append(errs, errors.New("trace: prefix model probabilities must be in [0, 1]"))
	}
	if m.Window < 1 || m.Systems < 1 || m.SystemTokens < 0 {
		errs = append(errs, errors.New("trace: prefix model window and systems must be >= 1, system tokens >= 0"))
	}
	if !(m.ZipfS > 1) {
		errs = append(errs, fmt.Errorf("trace: prefix model zipf exponent %v must be > 1", m.ZipfS))
	}
	return errors.Join(errs...)
}

// SynthesizePrefixes returns recs with hash ids drawn by model m (see
// PrefixModel); input records' HashIDs are ignored. Deterministic for a
// given rng seed.
func SynthesizePrefixes(recs []Record, m PrefixModel, rng *rand.Rand) ([]Record, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	px := NewPrefixes(m.Systems, m.SystemTokens/TraceBlockTokens)
	zipf := rand.NewZipf(rng, m.ZipfS, 1, uint64(m.Systems-1))
	var open []*Conversation // most recent last
	out := make([]Record, len(recs))
	for i, r := range recs {
		var conv *Conversation
		if rng.Float64() < m.Continue {
			for k := len(open) - 1; k >= max(0, len(open)-m.Window); k-- {
				if open[k].Tokens() <= r.InputLength {
					conv = open[k]
					open = append(open[:k], open[k+1:]...)
					break
				}
			}
		}
		if conv == nil {
			sys := -1
			if rng.Float64() < m.PrefixShare {
				sys = int(zipf.Uint64())
			}
			conv = px.Start(sys, r.InputLength)
		}
		r.InputLength = max(r.InputLength, 1)
		r.HashIDs = px.Prompt(conv, r.InputLength)
		px.Answer(conv, r.OutputLength)
		open = append(open, conv)
		if len(open) > 4*m.Window {
			open = slices.Delete(open, 0, len(open)-m.Window)
		}
		out[i] = r
	}
	return out, nil
}
