// Package indexertest is the conformance suite every indexer.Index must
// pass: datadriven scripts (indexer/testdata/conformance) run with
// byte-identical expected output against each implementation, and a
// differential test against Reference, a naive map-based model of the
// DESIGN.md §3 semantics.
//
// Script commands (hashes are hexadecimal; rank defaults to 0):
//
//	store worker=1 [rank=0] [parent=-|H] blocks=(E:L,...)   engine hash E, local hash L
//	remove worker=1 [rank=0] hashes=(E,...)
//	clear worker=1 [rank=0]
//	remove-worker worker=1
//	match locals=(L,...)        prints "w<worker>: <overlap>" lines or "none"
//	dump                        prints the Dump events; also checks that the
//	                            dump rebuilds an identical index
//	stats                       blocks, nodes, workers and counters (not bytes)
//
// Scripts in indexer/testdata/groups run against indexer.Groups over each
// inner index (RunGroups) and take, besides, [group=INDEX:KIND[/WINDOW]]
// on store and remove (e.g. group=1:sliding_window/9, group=2:mamba) and:
//
//	init [block-size=N] [max-pending=N] [full-only]   a fresh overlay
//	explain worker=1 locals=(L,...)   the joint match and each group's figure
//	groups                            blocks per group of each hybrid worker
//
// RunGroupsDifferential checks Groups against a naive model of the joint
// rule.
//
// Every command is followed by the index's Check() when it has one.
package indexertest
