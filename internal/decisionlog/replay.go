package decisionlog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"

	"github.com/kvrouter/kvrouter/selector"
)

// Change is one replayed decision that differs from its log.
type Change struct {
	ID string
	// Choice: the logged pick (the selector's, before session affinity)
	// would no longer be chosen; From is it, To the replayed pick.
	Choice   bool
	From, To string
	// Costs counts the candidates whose filter, cost or probability
	// differ; Delta is the logged pick's cost change.
	Costs int
	Delta float64
}

// Report sums a replay.
type Report struct {
	Replayed, Skipped, ChoiceChanged, CostChanged int
	Changes                                       []Change
}

// Replay scores every logged decision again with this binary's selector
// and the logged configuration, with set (a JSON object of
// selector.Config fields, e.g. {"PrefillLoadScale":2}; nil none) applied
// over it, and reports which decisions would change. Records without
// inputs (blind policies) are skipped. An unchanged binary and set nil
// report no change.
func Replay(recs []Record, set []byte) (Report, error) {
	var rep Report
	rng := rand.New(rand.NewPCG(1, 2)) // ties only; a tie keeps the logged pick (Prob > 0)
	for i := range recs {
		rec := &recs[i]
		in := rec.In
		if in == nil || !in.Filled || in.Chosen < 0 || in.Chosen >= len(in.Candidates) {
			rep.Skipped++
			continue
		}
		cfg := in.Config
		if len(set) > 0 {
			dec := json.NewDecoder(bytes.NewReader(set))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&cfg); err != nil {
				return rep, fmt.Errorf("decisionlog: replay --set: %w", err)
			}
		}
		if err := cfg.Validate(); err != nil {
			return rep, fmt.Errorf("decisionlog: replay %s: %w", rec.ID, err)
		}
		res, err := selector.New(cfg).Select(&in.Request, in.Candidates, rng)
		rep.Replayed++
		c := Change{ID: rec.ID, From: in.Candidates[in.Chosen].Worker.String()}
		if err != nil {
			c.Choice, c.To = true, err.Error()
		} else {
			if b := res.Breakdowns[in.Chosen]; b.Out != selector.ReasonNone || b.Prob == 0 {
				c.Choice, c.To = true, "w"+res.Breakdowns[res.Chosen].Worker.String()
			}
			c.Costs, c.Delta = costDiffs(rec, res.Breakdowns, c.From)
		}
		if c.Choice {
			rep.ChoiceChanged++
		}
		if c.Costs > 0 {
			rep.CostChanged++
		}
		if c.Choice || c.Costs > 0 {
			rep.Changes = append(rep.Changes, c)
		}
	}
	return rep, nil
}

// costDiffs counts the candidates whose replayed breakdown differs from
// the logged one, and returns the change of the chosen one's cost.
func costDiffs(rec *Record, bs []selector.Breakdown, chosen string) (n int, delta float64) {
	logged := make(map[string]*Cand, len(rec.Cands))
	for i := range rec.Cands {
		logged[rec.Cands[i].Worker] = &rec.Cands[i]
	}
	for _, b := range bs {
		w := b.Worker.String()
		c, ok := logged[w]
		out := ""
		if b.Out != selector.ReasonNone {
			out = b.Out.String()
		}
		if !ok || c.Out != out || c.Cost != b.Cost || c.Prob != b.Prob {
			n++
		}
		if ok && w == chosen {
			delta = b.Cost - c.Cost
		}
	}
	return n, delta
}

// WriteReport prints rep: one line per changed decision, then the sums.
func WriteReport(w io.Writer, rep Report) error {
	var b bytes.Buffer
	for _, c := range rep.Changes {
		fmt.Fprintf(&b, "%s:", c.ID)
		if c.Choice {
			fmt.Fprintf(&b, " choice w%s -> %s", c.From, c.To)
		}
		if c.Costs > 0 {
			fmt.Fprintf(&b, " costs of %d candidates (chosen %+.6g)", c.Costs, c.Delta)
		}
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "replayed %d decisions (%d without inputs skipped): %d choices changed, %d with changed costs\n",
		rep.Replayed, rep.Skipped, rep.ChoiceChanged, rep.CostChanged)
	_, err := w.Write(b.Bytes())
	return err
}

// ErrChanged reports that a replay changed some logged choice.
var ErrChanged = errors.New("decisionlog: replay changed logged choices")

// Options are kvrouter explain's: explain Request, or Replay (with Set,
// Replay's knob changes).
type Options struct {
	Request string
	Replay  bool
	Set     string
}

// Run reads the log at path and explains o.Request or replays it, writing
// to w. A replay that changes a choice returns ErrChanged after its
// report (a non-zero exit for a regression check).
func Run(w io.Writer, path string, o Options) error {
	if (o.Request == "") == !o.Replay {
		return errors.New("decisionlog: give exactly one of --request ID and --replay")
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("decisionlog: %w", err)
	}
	defer f.Close()
	recs, err := Decode(f)
	if err != nil {
		return err
	}
	if !o.Replay {
		return Explain(w, recs, o.Request)
	}
	var set []byte
	if o.Set != "" {
		set = []byte(o.Set)
	}
	rep, err := Replay(recs, set)
	if err != nil {
		return err
	}
	if err := WriteReport(w, rep); err != nil {
		return err
	}
	if rep.ChoiceChanged > 0 {
		return fmt.Errorf("%d of %d: %w", rep.ChoiceChanged, rep.Replayed, ErrChanged)
	}
	return nil
}
