package frontend

import (
	"crypto/subtle"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/kvrouter/kvrouter/internal/oai"
	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/selector"
)

// Per-request salt and placement headers (the OpenAI proxy, POST /route
// and the endpoint picker read them alike).
const (
	// HeaderCacheSalt is a tenant's prefix-cache salt, vLLM's cache_salt:
	// prompts with different salts never share cached blocks. When set it
	// wins over the body's cache_salt and is written into the forwarded
	// body, so the engine salts exactly as the router predicts (a gateway
	// that authenticates tenants sets it; a client cannot then pick
	// another tenant's salt).
	HeaderCacheSalt = "X-Kvrouter-Cache-Salt"
	// HeaderPinWorker pins the request to one worker: "ID" (any of its
	// ranks) or "ID:RANK". Admin key.
	HeaderPinWorker = "X-Kvrouter-Pin-Worker"
	// HeaderDPRanks admits only data-parallel ranks in "LO-HI" (inclusive)
	// or the one rank "N". Admin key.
	HeaderDPRanks = "X-Kvrouter-DP-Ranks"
	// HeaderRequireLabels admits only workers carrying every
	// "key=value" pair of a comma-separated list. Admin key.
	HeaderRequireLabels = "X-Kvrouter-Require-Labels"
)

// maxRequiredLabels bounds HeaderRequireLabels' pairs (a worker registers
// at most discovery.MaxLabels).
const maxRequiredLabels = 64

// Placement is a request's hard placement rules: a pinned worker (and
// rank), a data-parallel rank range, required worker labels. An
// unsatisfiable placement is answered 503 (no eligible worker), never
// routed elsewhere.
type Placement struct {
	// PinWorker, when set, is the only worker the request may use;
	// PinRank, when also set, the only rank.
	PinWorker *uint64
	PinRank   *uint32
	// Ranks, when set, bounds the data-parallel rank (inclusive).
	Ranks *selector.RankRange
	// Labels are key=value pairs the worker must carry.
	Labels map[string]string
}

// IsZero reports whether p sets no rule.
func (p *Placement) IsZero() bool {
	return p == nil || (p.PinWorker == nil && p.Ranks == nil && len(p.Labels) == 0)
}

// Merge adds q's rules to p (q wins where both set one).
func (p *Placement) Merge(q *Placement) {
	if q == nil {
		return
	}
	if q.PinWorker != nil {
		p.PinWorker, p.PinRank = q.PinWorker, q.PinRank
	}
	if q.Ranks != nil {
		p.Ranks = q.Ranks
	}
	for k, v := range q.Labels {
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		p.Labels[k] = v
	}
}

// ParsePin parses "ID" or "ID:RANK".
func ParsePin(s string) (uint64, *uint32, error) {
	id, rk, hasRank := strings.Cut(strings.TrimSpace(s), ":")
	w, err := strconv.ParseUint(id, 10, 64)
	if err != nil {
		return 0, nil, fmt.Errorf("pin %q: want ID or ID:RANK", s)
	}
	if !hasRank {
		return w, nil, nil
	}
	r, err := strconv.ParseUint(rk, 10, 32)
	if err != nil {
		return 0, nil, fmt.Errorf("pin %q: want ID or ID:RANK", s)
	}
	r32 := uint32(r)
	return w, &r32, nil
}

// ParseRanks parses "LO-HI" or "N".
func ParseRanks(s string) (*selector.RankRange, error) {
	lo, hi, isRange := strings.Cut(strings.TrimSpace(s), "-")
	if !isRange {
		hi = lo
	}
	a, err1 := strconv.ParseUint(lo, 10, 32)
	b, err2 := strconv.ParseUint(hi, 10, 32)
	if err1 != nil || err2 != nil || a > b {
		return nil, fmt.Errorf("dp ranks %q: want LO-HI (LO <= HI) or N", s)
	}
	return &selector.RankRange{Min: uint32(a), Max: uint32(b)}, nil
}

// ParseLabels parses "k=v,k2=v2".
func ParseLabels(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("labels %q: want key=value[,key=value...]", s)
		}
		out[k] = v
	}
	if len(out) > maxRequiredLabels {
		return nil, fmt.Errorf("labels: %d pairs, at most %d", len(out), maxRequiredLabels)
	}
	return out, nil
}

// Placement field names in errors (PlacementOf's which).
const (
	FieldPin    = "pin_worker"
	FieldRanks  = "dp_ranks"
	FieldLabels = "labels"
)

// PlacementOf builds a placement from its textual fields: pin ("ID" or
// "ID:RANK"), ranks ("LO-HI" or "N") and labels, each "" or nil when
// absent. It returns nil for no rule, or the field (FieldPin, ...) that
// failed and why.
func PlacementOf(pin, ranks string, labels map[string]string) (*Placement, string, error) {
	var p Placement
	if pin != "" {
		w, rk, err := ParsePin(pin)
		if err != nil {
			return nil, FieldPin, err
		}
		p.PinWorker, p.PinRank = &w, rk
	}
	if ranks != "" {
		r, err := ParseRanks(ranks)
		if err != nil {
			return nil, FieldRanks, err
		}
		p.Ranks = r
	}
	if len(labels) > maxRequiredLabels {
		return nil, FieldLabels, fmt.Errorf("labels: %d pairs, at most %d", len(labels), maxRequiredLabels)
	}
	p.Labels = labels
	if p.IsZero() {
		return nil, "", nil
	}
	return &p, "", nil
}

// dpRanksKey is HeaderDPRanks in canonical form: Get canonicalizes a
// key that is not, with an allocation on every request.
var dpRanksKey = http.CanonicalHeaderKey(HeaderDPRanks)

// placementHeaders reads the placement headers of r (nil when none).
func placementHeaders(h http.Header) (*Placement, *oai.Error) {
	pin, ranks, req := h.Get(HeaderPinWorker), h.Get(dpRanksKey), h.Get(HeaderRequireLabels)
	if pin == "" && ranks == "" && req == "" {
		return nil, nil // no rule (PlacementOf's answer, without its allocation)
	}
	var labels map[string]string
	if req != "" {
		l, err := ParseLabels(req)
		if err != nil {
			return nil, oai.BadRequest(HeaderRequireLabels, err.Error())
		}
		labels = l
	}
	p, which, err := PlacementOf(pin, ranks, labels)
	if err != nil {
		return nil, oai.BadRequest(map[string]string{FieldPin: HeaderPinWorker, FieldRanks: HeaderDPRanks}[which], err.Error())
	}
	return p, nil
}

// admin reports whether r carries an admin key: the admin keys, else the
// client keys when no admin key is set; with no key at all every caller
// is (as the admin endpoints are then open).
func (s *Server) admin(r *http.Request) bool {
	keys := s.cfg.AdminKeys
	if len(keys) == 0 {
		keys = s.cfg.APIKeys
	}
	if len(keys) == 0 {
		return true
	}
	got, ok := bearer(r)
	if !ok {
		return false
	}
	for _, k := range keys {
		if subtle.ConstantTimeCompare([]byte(got), []byte(k)) == 1 {
			return true
		}
	}
	return false
}

// errPlacementForbidden answers placement asked without the admin key: a
// client could otherwise pile its load onto one worker.
func errPlacementForbidden(what string) *oai.Error {
	return &oai.Error{Status: http.StatusForbidden, Type: oai.TypeInvalidRequest, Code: "placement_forbidden", Param: what,
		Message: "placement constraints (" + HeaderPinWorker + ", " + HeaderDPRanks + ", " + HeaderRequireLabels +
			", /route's pin_worker, dp_ranks, labels) need the admin key"}
}

// setPlacement applies p to j, checking the admin key of r (trusted
// skips the check: the shell's own metadata).
func (s *Server) setPlacement(r *http.Request, j *job, p *Placement, trusted bool) *oai.Error {
	if p.IsZero() {
		return nil
	}
	if !trusted && !s.admin(r) {
		return errPlacementForbidden(HeaderPinWorker)
	}
	if j.place == nil {
		j.place = &Placement{}
	}
	j.place.Merge(p)
	return nil
}

// constrain adds j's placement to c; false when it admits no worker at
// all (a pin outside the request's allow-list).
func (j *job) constrain(c *selector.Constraints) bool {
	p := j.place
	if p.IsZero() {
		return true
	}
	if p.PinWorker != nil {
		id := *p.PinWorker
		if c.Allow != nil && !slices.Contains(c.Allow, id) {
			return false
		}
		c.Allow = []uint64{id}
		if p.PinRank != nil {
			c.Pin = &kvevents.Worker{ID: id, Rank: *p.PinRank}
		}
	}
	c.Ranks = p.Ranks
	c.Labels = p.Labels
	return true
}
