package frontend

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"time"

	"github.com/kvrouter/kvrouter/indexer"
	"github.com/kvrouter/kvrouter/internal/oai"
	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/router"
	"github.com/kvrouter/kvrouter/selector"
)

// RouteRequest is the body of POST /route: exactly one of Prompt (text or
// token ids), Messages (a chat) or Tokens.
type RouteRequest struct {
	Prompt   *oai.Prompt            `json:"prompt,omitempty"`
	Messages []oai.ChatMessageInput `json:"messages,omitempty"`
	Tokens   []uint32               `json:"tokens,omitempty"`
	// LoRA and Namespace salt the block hashes.
	LoRA      string  `json:"lora,omitempty"`
	Namespace string  `json:"namespace,omitempty"`
	Session   string  `json:"session_id,omitempty"`
	Priority  float64 `json:"priority,omitempty"`
	// Track keeps the decision's load in the tracker until the caller
	// reports POST /route/{id}/prefill_done and /route/{id}/free (for
	// gateways that proxy themselves). Default false: the decision is
	// computed and released at once.
	Track bool `json:"track,omitempty"`
	// Hop places one hop of a disaggregated request (DESIGN.md §10):
	// "prefill" (the prefill pool), "decode" (the decode pool, blocks it
	// lacks priced as a transfer) or "" / "aggregated" (the default).
	Hop string `json:"hop,omitempty"`
	// CacheSalt is vLLM's cache_salt (HeaderCacheSalt wins over it): it
	// salts the prompt's first block, as the engine does.
	CacheSalt string `json:"cache_salt,omitempty"`
	// PinWorker ("ID" or "ID:RANK"), DPRanks ("LO-HI" or "N") and Labels
	// are placement constraints as the headers of placement.go give them
	// (admin key; unsatisfiable: 503).
	PinWorker string            `json:"pin_worker,omitempty"`
	DPRanks   string            `json:"dp_ranks,omitempty"`
	Labels    map[string]string `json:"labels,omitempty"`
}

// placement returns rr's placement fields (nil none).
func (rr *RouteRequest) placement() (*Placement, *oai.Error) {
	p, which, err := PlacementOf(rr.PinWorker, rr.DPRanks, rr.Labels)
	if err != nil {
		return nil, oai.BadRequest(which, err.Error())
	}
	return p, nil
}

// Candidate is one worker's cost breakdown in a RouteResponse.
type Candidate struct {
	Worker   uint64  `json:"worker_id"`
	DPRank   uint32  `json:"dp_rank"`
	URL      string  `json:"url,omitempty"`
	Out      string  `json:"filtered,omitempty"`
	Overlap  [3]int  `json:"overlap_blocks"` // device, host, disk
	Credit   float64 `json:"credit"`
	Decay    float64 `json:"decay"`
	Prefill  float64 `json:"prefill_blocks"`
	Decode   float64 `json:"decode_blocks"`
	Requests float64 `json:"requests_term"`
	Cost     float64 `json:"cost"`
	Prob     float64 `json:"probability"`
	// TierOverlap is the overlap per tier name (tiers.go); TierCredit the
	// credit each tier earned (adding up to Credit); OnboardMS the time
	// cost's load time of the lower-tier blocks (selector.Onboard).
	TierOverlap map[string]int     `json:"tier_overlap"`
	TierCredit  map[string]float64 `json:"tier_credit,omitempty"`
	OnboardMS   float64            `json:"onboard_ms,omitempty"`
	// LoRATier, for a request naming an adapter, is the worker's LoRA
	// tier: loaded, free-slot or full (lora.go); "" when the request names
	// none or the worker reports no adapters. LoRACost is the adapter term
	// the cost charged the worker (selector lora.go: its load, eviction
	// and home charges; ms under the time cost, blocks under the block
	// cost), included in Cost.
	LoRATier string  `json:"lora_tier,omitempty"`
	LoRACost float64 `json:"lora_cost,omitempty"`
	// Groups explains a hybrid worker's device overlap (its joint match
	// over KV cache groups); absent for workers without groups.
	Groups *GroupOverlap `json:"groups,omitempty"`
}

// GroupOverlap explains a hybrid worker's device overlap (DESIGN.md §13):
// Overlap[0] is Joint, the largest prefix every KV cache group can serve.
type GroupOverlap struct {
	// Full is the full-attention group's overlap (what a router without
	// groups credits).
	Full  int `json:"full_blocks"`
	Joint int `json:"joint_blocks"`
	// LimitedBy names the group whose own match is smallest when Joint <
	// Full ("g1:sliding_window/4096"); absent when full attention limits
	// the match.
	LimitedBy string `json:"limited_by,omitempty"`
	// Groups is each sliding or state group's own match: the deepest
	// prefix up to Full it can serve alone.
	Groups []GroupBlocks `json:"groups"`
}

// GroupBlocks is one KV cache group's figure ("g2:mamba": 12).
type GroupBlocks struct {
	Group  string `json:"group"`
	Blocks int    `json:"blocks"`
}

// groupOverlap is m in the /route breakdown's form.
func groupOverlap(m indexer.JointMatch) *GroupOverlap {
	out := &GroupOverlap{Full: m.Full, Joint: m.Blocks}
	if m.Limit >= 0 {
		out.LimitedBy = m.Groups[m.Limit].Group.String()
	}
	for _, g := range m.Groups {
		out.Groups = append(out.Groups, GroupBlocks{Group: g.Group.String(), Blocks: g.Blocks})
	}
	return out
}

// RouteResponse is the answer of POST /route.
type RouteResponse struct {
	RequestID     string      `json:"request_id"`
	Worker        uint64      `json:"worker_id"`
	DPRank        uint32      `json:"dp_rank"`
	URL           string      `json:"url,omitempty"`
	OverlapBlocks [3]int      `json:"overlap_blocks"`
	Blocks        int         `json:"prompt_blocks"`
	PromptTokens  int         `json:"prompt_tokens"`
	CachedTokens  int         `json:"cached_tokens"`
	PrefillTokens int         `json:"prefill_tokens"`
	Cost          float64     `json:"cost"`
	Affinity      bool        `json:"affinity"`
	Tracked       bool        `json:"tracked"`
	Candidates    []Candidate `json:"candidates"`
	// Hop echoes the request's; TransferBlocks (decode hop) are the full
	// prompt blocks the worker lacks and receives by KV transfer.
	Hop            string `json:"hop,omitempty"`
	TransferBlocks int    `json:"transfer_blocks,omitempty"`

	// TierOverlap is the chosen worker's overlap per tier name (tiers.go).
	TierOverlap map[string]int `json:"tier_overlap"`
	// Groups explains the chosen worker's device overlap when it is a
	// hybrid worker (Candidate.Groups); absent otherwise.
	Groups *GroupOverlap `json:"groups,omitempty"`
}

func (s *Server) handleRoute(w http.ResponseWriter, r *http.Request) {
	const ep = "route"
	j, body, ok := s.begin(w, r, ep)
	if !ok {
		return
	}
	var rr RouteRequest
	if err := json.Unmarshal(body, &rr); err != nil {
		s.fail(w, ep, oai.BadRequest("", "invalid request body: "+err.Error()))
		return
	}
	if e := s.checkSession(rr.Session, "session_id"); e != nil {
		s.fail(w, ep, e)
		return
	}
	var err error
	switch {
	case rr.Tokens != nil:
		j.tokens = rr.Tokens
	case rr.Prompt != nil && rr.Prompt.IsTokens:
		j.tokens = rr.Prompt.Tokens
	case rr.Prompt != nil:
		j.tokens, err = s.encode(r.Context(), rr.Prompt.Text)
	case len(rr.Messages) > 0:
		msgs, gen := routingMessages(rr.Messages)
		j.tokens, err = s.encodeChat(r.Context(), msgs, gen)
	default:
		s.fail(w, ep, oai.BadRequest("prompt", "give one of prompt, messages or tokens"))
		return
	}
	if err != nil {
		s.fail(w, ep, tokenizeError(err))
		return
	}
	if e := s.checkPrompt(len(j.tokens)); e != nil {
		s.fail(w, ep, e)
		return
	}
	if rr.Session != "" {
		j.session = rr.Session
	}
	if rr.Priority != 0 {
		if rr.Priority < -MaxPriority || rr.Priority > MaxPriority {
			s.fail(w, ep, oai.BadRequest("priority", fmt.Sprintf("priority must be in [-%g, %g]", MaxPriority, MaxPriority)))
			return
		}
		j.priority = rr.Priority
	}
	hop, err := router.ParseHop(rr.Hop)
	if err != nil {
		s.fail(w, ep, oai.BadRequest("hop", err.Error()))
		return
	}
	j.salt = cmpOr(j.saltHeader, rr.CacheSalt)
	p, e := rr.placement()
	if e == nil {
		e = s.setPlacement(r, j, p, false)
	}
	if e != nil {
		s.fail(w, ep, e)
		return
	}
	who, size := s.owner(r), int64(0)
	if rr.Track {
		var e *oai.Error
		size = s.bookingBytes(who, len(j.tokens))
		if j.id, e = s.reserveBooking(who, size); e != nil {
			s.fail(w, ep, e)
			return
		}
	}
	d, err := s.routeSalted(r, j, rr.LoRA, rr.Namespace, hop)
	if err != nil {
		if rr.Track {
			s.unreserve(who, size)
		}
		s.fail(w, ep, routeError(err))
		return
	}
	if rr.Track {
		s.holdBooking(j.id, who, size)
	}
	if !rr.Track {
		_ = s.rt.Free(j.id, time.Now())
	}
	out := RouteResponse{
		RequestID: j.id, Worker: d.Worker.ID, DPRank: d.Worker.Rank,
		Blocks: d.Blocks, PromptTokens: d.ISL, CachedTokens: d.CachedTokens, PrefillTokens: d.PrefillTokens,
		Cost: d.Cost, Affinity: d.Affinity, Tracked: rr.Track, TransferBlocks: d.TransferBlocks,
	}
	if hop != router.HopAggregated {
		out.Hop = hop.String()
	}
	copy(out.OverlapBlocks[:], d.Overlap[:3])
	out.TierOverlap = tierInts(&d.Overlap)
	if wk, ok := s.pool.Get(d.Worker.ID); ok {
		out.URL = wk.URL
	}
	rc := s.rt.Config()
	for _, c := range d.Candidates {
		out.Candidates = append(out.Candidates, s.candidate(c, &rc))
		s.loraTier(&out.Candidates[len(out.Candidates)-1], rr.LoRA)
	}
	s.explainGroups(&out, j, rr.LoRA, rr.Namespace, d.Worker)
	s.m.request(ep, "200")
	writeJSON(w, http.StatusOK, out)
}

// explainGroups adds the group breakdown of every hybrid candidate (and
// of the chosen worker) to out; a fleet without hybrid workers costs one
// check.
func (s *Server) explainGroups(out *RouteResponse, j *job, lora, ns string, chosen kvevents.Worker) {
	ws := []kvevents.Worker{chosen}
	for _, c := range out.Candidates {
		ws = append(ws, kvevents.Worker{ID: c.Worker, Rank: c.DPRank})
	}
	req := router.Request{Tokens: j.tokens, LoRA: lora, Namespace: ns, CacheSalt: j.salt}
	gm := s.rt.GroupMatches(&req, ws)
	if gm == nil {
		return
	}
	if m, ok := gm[chosen]; ok {
		out.Groups = groupOverlap(m)
	}
	for i := range out.Candidates {
		c := &out.Candidates[i]
		if m, ok := gm[kvevents.Worker{ID: c.Worker, Rank: c.DPRank}]; ok {
			c.Groups = groupOverlap(m)
		}
	}
}

func (s *Server) candidate(c selector.Breakdown, rc *router.Config) Candidate {
	out := Candidate{Worker: c.Worker.ID, DPRank: c.Worker.Rank, Credit: c.Credit, Decay: c.Decay,
		Prefill: c.Prefill, Decode: c.Decode, Requests: c.Requests, LoRACost: c.LoRA, Cost: c.Cost, Prob: c.Prob}
	if c.Out != selector.ReasonNone {
		out.Out = c.Out.String()
	}
	copy(out.Overlap[:], c.Overlap[:3])
	tierCandidate(&out, &c, rc)
	if wk, ok := s.pool.Get(c.Worker.ID); ok {
		out.URL = wk.URL
	}
	return out
}

// routeSalted routes j for /route (no retries, no proxying).
func (s *Server) routeSalted(r *http.Request, j *job, lora, ns string, hop router.Hop) (router.Decision, error) {
	if lora == "" && ns == "" {
		return s.routeHop(r.Context(), j, j.id, hop, nil)
	}
	req := router.Request{ID: j.id, Tokens: j.tokens, LoRA: lora, Namespace: ns, CacheSalt: j.salt, Priority: j.priority, Session: j.session, Tenant: j.tenant, Hop: hop}
	if !j.constrain(&req.Constraints) {
		return router.Decision{}, fmt.Errorf("frontend: pinned worker outside the allowed workers: %w", selector.ErrNoneEligible)
	}
	d, err := s.rt.Route(r.Context(), req, time.Now())
	if err == nil && d.Queued {
		_ = s.rt.Free(j.id, time.Now())
		return d, fmt.Errorf("frontend: /route cannot wait in the queue: %w", selector.ErrAllOverloaded)
	}
	s.kickSettle() // the booking (settle.go)
	return d, err
}

// IndexSummary is one worker+rank's line of GET /debug/index.
type IndexSummary struct {
	Worker uint64         `json:"worker_id"`
	DPRank uint32         `json:"dp_rank"`
	URL    string         `json:"url,omitempty"`
	Down   bool           `json:"down,omitempty"`
	Blocks map[string]int `json:"blocks"` // per tier name
	Total  int            `json:"total_blocks"`
	// Reachable counts, per lower tier, the blocks the router reads as
	// held in that tier or a faster one (Router.Config.TierChains: the
	// derived indexes the credit looks up); absent without the view.
	Reachable map[string]int `json:"reachable_blocks,omitempty"`
	// Timing is the worker's fitted timing model (Config.TimingFit), on
	// its rank-0 line; absent before its first observation.
	Timing *TimingSummary `json:"timing,omitempty"`
	// Health is what the worker's /metrics said (refusal, poll failures,
	// engine block size and capacity), Prediction its predicted vs
	// reported cached tokens (predict.go); both on its rank-0 line.
	Health     *EngineHealth `json:"health,omitempty"`
	Prediction *Prediction   `json:"prediction,omitempty"`
	// Tokenizer is the worker's tokenizer self-test (package pool) and
	// whether text prompts go to it as token ids, on its rank-0 line.
	Tokenizer *SelfTest `json:"tokenizer,omitempty"`
	// Ingest counts the worker's refused events and stream faults by
	// reason (CountIngest), on its rank-0 line.
	Ingest map[string]uint64 `json:"ingest,omitempty"`
	// MaxNumSeqs is the worker's sequence cap as the router uses it
	// (registration or Config.WorkerMaxNumSeqs), on its rank-0 line;
	// absent when unknown (no cap rule).
	MaxNumSeqs int `json:"max_num_seqs,omitempty"`
	// MaxBatchedTokens is the worker's token budget per step as the
	// router uses it (registration, engine or
	// Config.WorkerMaxBatchedTokens), on its rank-0 line; absent when
	// unknown (never saturated).
	MaxBatchedTokens int `json:"max_batched_tokens,omitempty"`
	// Groups is the blocks each sliding or state KV cache group of a
	// hybrid worker+rank holds (DESIGN.md §13; Blocks counts full
	// attention); absent for workers without groups.
	Groups []GroupBlocks `json:"groups,omitempty"`
}

// IndexReport is the body of GET /debug/index.
type IndexReport struct {
	Workers []IndexSummary `json:"workers"`
	Tiers   map[string]any `json:"tiers"`
	// Index is the event-fed index's kind ("flash" or "radix"; "" outside
	// the kv policy).
	Index string `json:"index"`
	// DumpHash is the sha256 (hex) of the whole index in a canonical form:
	// one record per cached block (tier, worker, rank, hash, local hash,
	// parent), sorted. Replicas that applied the same events report the
	// same hash, whatever their index kind or insertion order.
	DumpHash string `json:"dump_hash"`
}

// IndexSummaries counts the blocks each worker+rank holds per tier (from
// the index's Dump; a debugging aid, O(index size)).
func (s *Server) IndexSummaries() IndexReport {
	per := map[kvevents.Worker]*IndexSummary{}
	rep := IndexReport{Tiers: map[string]any{}, Index: s.IndexKind()}
	get := func(w kvevents.Worker) *IndexSummary {
		x := per[w]
		if x == nil {
			x = &IndexSummary{Worker: w.ID, DPRank: w.Rank, Blocks: map[string]int{}}
			per[w] = x
		}
		return x
	}
	for _, wk := range s.Workers() {
		x := get(kvevents.Worker{ID: wk.ID})
		x.URL, x.Down, x.MaxNumSeqs, x.MaxBatchedTokens = wk.URL, wk.Down(), wk.Info.MaxNumSeqs, wk.Info.MaxNumBatchedTokens
		x.Timing = s.fits.summary(wk.ID)
		x.Health, x.Prediction = s.pool.Health(wk.ID), s.preds.snapshot(wk.ID)
		st := s.pool.SelfTest(wk.ID)
		x.Tokenizer = &st
	}
	var recs []dumpRecord
	chains := s.rt.Config().TierChains
	for t := range kvevents.NumTiers {
		ix := s.rt.Index(kvevents.Tier(t))
		if ix == nil {
			continue
		}
		rep.Tiers[kvevents.Tier(t).String()] = ix.Stats()
		if chains && t != int(kvevents.TierDevice) {
			// Derived index (router.DumpTiers): what the credit reads.
			for _, ev := range ix.Dump() {
				x := get(ev.Worker())
				if x.Reachable == nil {
					x.Reachable = map[string]int{}
				}
				x.Reachable[kvevents.Tier(t).String()] += len(ev.Blocks)
			}
		}
	}
	if g := s.rt.Groups(); g != nil {
		for _, w := range g.HybridWorkers() {
			x := get(w)
			for _, gb := range g.WorkerGroups(w) {
				x.Groups = append(x.Groups, GroupBlocks{Group: gb.Name, Blocks: gb.Blocks})
			}
		}
	}
	// The blocks each tier holds (with the cross-tier view, its raw record).
	for _, ev := range s.rt.DumpTiers() {
		if ev.Group.Kind != kvevents.GroupFull {
			continue // a group's blocks: counted in Groups above
		}
		x := get(ev.Worker())
		x.Blocks[ev.Tier.String()] += len(ev.Blocks)
		x.Total += len(ev.Blocks)
		recs = appendRecords(recs, ev.Tier, &ev)
	}
	rep.DumpHash = hashRecords(recs)
	for _, id := range s.sink.Workers() {
		get(kvevents.Worker{ID: id}).Ingest = s.sink.Counts(id)
	}
	for _, x := range per {
		rep.Workers = append(rep.Workers, *x)
	}
	sort.Slice(rep.Workers, func(i, j int) bool {
		a, b := rep.Workers[i], rep.Workers[j]
		return a.Worker < b.Worker || (a.Worker == b.Worker && a.DPRank < b.DPRank)
	})
	return rep
}

func (s *Server) handleDebugIndex(w http.ResponseWriter, r *http.Request) {
	// Show every event received so far, not only those the writers got
	// to; a stalled writer must not hang the debug page.
	ctx, cancel := context.WithTimeout(r.Context(), time.Second)
	if err := s.Flush(ctx); err != nil {
		s.log.Warn("debug index: flush", "err", err)
	}
	cancel()
	writeJSON(w, http.StatusOK, s.IndexSummaries())
}

func (s *Server) handleDebugRouter(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte(s.rt.String()))
}

// dumpRecord is one cached block of a dump, independent of how the index
// grouped blocks into events.
type dumpRecord struct {
	tier                uint8
	worker              uint64
	rank                uint32
	hash, local, parent uint64
	hasParent           bool
}

func appendRecords(recs []dumpRecord, t kvevents.Tier, ev *kvevents.Event) []dumpRecord {
	hasParent, parent := ev.HasParent, ev.Parent
	for _, b := range ev.Blocks {
		recs = append(recs, dumpRecord{tier: uint8(t), worker: ev.WorkerID, rank: ev.DPRank,
			hash: b.Hash, local: b.Local, parent: parent, hasParent: hasParent})
		hasParent, parent = true, b.Hash
	}
	return recs
}

// hashRecords is the sha256 (hex) of recs in sorted order.
func hashRecords(recs []dumpRecord) string {
	slices.SortFunc(recs, func(a, b dumpRecord) int {
		return cmp.Or(cmp.Compare(a.tier, b.tier), cmp.Compare(a.worker, b.worker), cmp.Compare(a.rank, b.rank),
			cmp.Compare(a.hash, b.hash), cmp.Compare(a.local, b.local), cmp.Compare(a.parent, b.parent),
			cmp.Compare(b2i(a.hasParent), b2i(b.hasParent)))
	})
	h := sha256.New()
	var buf [1 + 8 + 4 + 8*3 + 1]byte
	for _, r := range recs {
		buf[0] = r.tier
		binary.LittleEndian.PutUint64(buf[1:], r.worker)
		binary.LittleEndian.PutUint32(buf[9:], r.rank)
		binary.LittleEndian.PutUint64(buf[13:], r.hash)
		binary.LittleEndian.PutUint64(buf[21:], r.local)
		binary.LittleEndian.PutUint64(buf[29:], r.parent)
		buf[37] = byte(b2i(r.hasParent))
		h.Write(buf[:])
	}
	return hex.EncodeToString(h.Sum(nil))
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
