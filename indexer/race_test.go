//go:build race

package indexer_test

// raceEnabled shortens the slowest randomized tests under -race, which
// slows them tenfold; plain `go test` runs them in full.
const raceEnabled = true
