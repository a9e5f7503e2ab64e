// Package progress shows how far a long run (a simulation, a replay) has
// come: a live bar when its writer is a terminal, and otherwise (a log
// file, a pipe, a CI job's output) one plain line at each quarter of the
// run, so logs get no carriage returns or escape sequences.
//
// A Bar is safe for concurrent use; a nil *Bar does nothing.
package progress
