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
// Every command is followed by the index's Check() when it has one.
package indexertest
