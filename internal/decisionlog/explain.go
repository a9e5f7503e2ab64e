package decisionlog

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// ErrNotFound reports that no record has the requested id.
var ErrNotFound = fmt.Errorf("decisionlog: request not in log")

// Explain writes why the worker of request id won: the decision, then
// every candidate with its cost terms, the winner first and the others
// by cost (filtered ones last with their reason), each with its margin
// over the winner. The last record of id counts (a retried request logs
// again).
func Explain(w io.Writer, recs []Record, id string) error {
	var rec *Record
	for i := range recs {
		if recs[i].ID == id {
			rec = &recs[i]
		}
	}
	if rec == nil {
		return fmt.Errorf("%q: %w", id, ErrNotFound)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "request %s -> worker %s cost=%s blocks=%d isl=%d cached=%d", rec.ID, rec.Worker,
		num(rec.Cost), rec.Blocks, rec.ISL, rec.Cached)
	if rec.Hop != "" {
		b.WriteString(" hop=" + rec.Hop)
	}
	if rec.Affinity {
		b.WriteString(" (session affinity chose it)")
	}
	if rec.Waited {
		b.WriteString(" (placed from the queue)")
	}
	if rec.Outcome != "" {
		b.WriteString(" outcome=" + rec.Outcome)
	}
	b.WriteByte('\n')
	for _, c := range order(rec) {
		mark := " "
		if c.Worker == rec.Worker {
			mark = "*"
		}
		fmt.Fprintf(&b, "%s w%s overlap=%d/%d/%d/%d", mark, c.Worker, c.Overlap[0], c.Overlap[1], c.Overlap[2], c.Overlap[3])
		if c.Out != "" {
			fmt.Fprintf(&b, " filtered: %s\n", c.Out)
			continue
		}
		fmt.Fprintf(&b, " credit=%s prefill=%s decode=%s", num(c.Credit), num(c.Prefill), num(c.Decode))
		terms := []struct {
			k string
			v float64
		}{{"decay", c.Decay - 1}, {"queue", c.Queue}, {"usage", c.Usage}, {"imposed", c.Imposed},
			{"inflight", c.InFlight}, {"waiting", c.Waiting}, {"slotwait", c.SlotWait},
			{"onboard", c.Onboard}, {"requests", c.Requests}, {"lora", c.LoRA}}
		for _, t := range terms {
			if t.v == 0 {
				continue
			}
			v := t.v
			if t.k == "decay" {
				v = c.Decay
			}
			fmt.Fprintf(&b, " %s=%s", t.k, num(v))
		}
		if c.Passes > 0 {
			fmt.Fprintf(&b, " passes=%d", c.Passes)
		}
		fmt.Fprintf(&b, " cost=%s p=%s", num(c.Cost), num(c.Prob))
		if c.Worker != rec.Worker {
			fmt.Fprintf(&b, " (+%s)", num(c.Cost-rec.Cost))
		}
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// order returns the candidates winner first, then scored by cost, then
// filtered, each group stable in the log's worker order.
func order(rec *Record) []Cand {
	out := make([]Cand, 0, len(rec.Cands))
	rank := func(c Cand) int {
		switch {
		case c.Worker == rec.Worker:
			return 0
		case c.Out == "":
			return 1
		}
		return 2
	}
	for g := 0; g < 3; g++ {
		start := len(out)
		for _, c := range rec.Cands {
			if rank(c) == g {
				out = append(out, c)
			}
		}
		grp := out[start:]
		for i := 1; i < len(grp); i++ { // insertion sort: stable, small n
			for j := i; j > 0 && grp[j].Cost < grp[j-1].Cost && g == 1; j-- {
				grp[j], grp[j-1] = grp[j-1], grp[j]
			}
		}
	}
	return out
}

func num(f float64) string { return strconv.FormatFloat(f, 'g', 6, 64) }
