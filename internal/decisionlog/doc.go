// Package decisionlog writes and reads the router's opt-in decision log:
// JSON lines, one per sampled routing decision, payload-free (no prompt
// text, no tokens; only block counts, overlaps and every candidate's cost
// terms), and explains a logged decision ("why did this worker win").
//
// Schema version 1 (Record, field "v"): request id, hop, prompt blocks
// and tokens, the chosen worker and its cost, the outcome when the
// request landed ("ok", "error", ...), and every candidate with its
// overlap per tier, the reason it was filtered out, and the cost terms
// of selector.Breakdown. A reader rejects other versions.
//
// The Writer is bounded three ways: it keeps one decision in Sample, at
// most Rate records per second, and stops writing (and counts drops) once
// MaxBytes are written, so a log never grows past its cap. It does not
// fsync: the log is a diagnosis aid, not a ledger.
package decisionlog
