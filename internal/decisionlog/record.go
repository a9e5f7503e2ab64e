package decisionlog

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/router"
	"github.com/kvrouter/kvrouter/selector"
)

// Version is the schema version written in every record's "v".
const Version = 1

// MaxLine bounds one record's line when reading, so a corrupt log cannot
// make the reader buffer without limit.
const MaxLine = 4 << 20

// Record is one logged decision (schema version 1).
type Record struct {
	V        int     `json:"v"`
	Time     string  `json:"t,omitempty"`
	ID       string  `json:"id"`
	Hop      string  `json:"hop,omitempty"`
	Blocks   int     `json:"blocks"`
	ISL      int     `json:"isl"`
	Cached   int     `json:"cached"`
	Worker   string  `json:"worker"`
	Cost     float64 `json:"cost"`
	Affinity bool    `json:"affinity,omitempty"`
	Waited   bool    `json:"waited,omitempty"`
	Outcome  string  `json:"outcome,omitempty"`
	// Cands holds every candidate, sorted by worker as the router gave them.
	Cands []Cand `json:"cands"`
	// CfgDigest names In.Config (the first 16 hex digits of the SHA-256
	// of its JSON), so records of one configuration group together.
	CfgDigest string `json:"cfg,omitempty"`
	// In are the selector's inputs (router.Inputs as encoding/json writes
	// it: Go field names), absent for the blind policies; Replay scores
	// them again.
	In *router.Inputs `json:"in,omitempty"`
}

// Cand is one candidate's cost terms (selector.Breakdown); Out is empty
// for a scored candidate and names the filter otherwise.
type Cand struct {
	Worker   string                 `json:"w"`
	Out      string                 `json:"out,omitempty"`
	Overlap  [kvevents.NumTiers]int `json:"overlap"`
	Credit   float64                `json:"credit"`
	Decay    float64                `json:"decay"`
	Prefill  float64                `json:"prefill"`
	Decode   float64                `json:"decode"`
	Queue    float64                `json:"queue,omitempty"`
	Passes   int                    `json:"passes,omitempty"`
	Usage    float64                `json:"usage,omitempty"`
	Imposed  float64                `json:"imposed,omitempty"`
	InFlight float64                `json:"inflight,omitempty"`
	Waiting  float64                `json:"waiting,omitempty"`
	SlotWait float64                `json:"slotwait,omitempty"`
	Onboard  float64                `json:"onboard,omitempty"`
	Requests float64                `json:"requests,omitempty"`
	LoRA     float64                `json:"lora,omitempty"`
	Cost     float64                `json:"cost"`
	Prob     float64                `json:"prob"`
}

// FromDecision builds the record of d with its outcome ("" if unknown).
func FromDecision(d *router.Decision, outcome string) Record {
	r := Record{V: Version, ID: d.RequestID, Blocks: d.Blocks, ISL: d.ISL, Cached: d.CachedTokens,
		Worker: d.Worker.String(), Cost: d.Cost, Affinity: d.Affinity, Waited: d.Waited, Outcome: outcome,
		Cands: make([]Cand, len(d.Candidates))}
	if d.Hop != router.HopAggregated {
		r.Hop = d.Hop.String()
	}
	if d.Inputs != nil && d.Inputs.Filled {
		r.In, r.CfgDigest = d.Inputs, digest(&d.Inputs.Config)
	}
	for i, b := range d.Candidates {
		c := Cand{Worker: b.Worker.String(), Overlap: b.Overlap, Credit: b.Credit, Decay: b.Decay,
			Prefill: b.Prefill, Decode: b.Decode, Queue: b.Queue, Passes: b.Passes, Usage: b.Usage,
			Imposed: b.Imposed, InFlight: b.InFlight, Waiting: b.Waiting, SlotWait: b.SlotWait,
			Onboard: b.Onboard, Requests: b.Requests, LoRA: b.LoRA, Cost: b.Cost, Prob: b.Prob}
		if b.Out != 0 {
			c.Out = b.Out.String()
		}
		r.Cands[i] = c
	}
	return r
}

// ErrVersion reports a record of a schema version this reader does not know.
var ErrVersion = errors.New("decisionlog: unknown schema version")

// Decode reads every record of a log. A line that is not a version-1
// record is an error naming its line number.
func Decode(r io.Reader) ([]Record, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), MaxLine)
	var out []Record
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		if len(line) == 0 {
			continue
		}
		var rec Record
		if err := json.Unmarshal(line, &rec); err != nil {
			return out, fmt.Errorf("decisionlog: line %d: %w", n, err)
		}
		if rec.V != Version {
			return out, fmt.Errorf("decisionlog: line %d: v=%d: %w", n, rec.V, ErrVersion)
		}
		out = append(out, rec)
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("decisionlog: read: %w", err)
	}
	return out, nil
}

// digest names a selector configuration (Record.CfgDigest).
func digest(c *selector.Config) string {
	b, err := json.Marshal(c)
	if err != nil {
		return ""
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:8])
}
