// Package lint holds the house rules of STYLE.md as tests (the pebble
// pattern). Each check has a companion test that feeds it a bad sample, so a
// check that silently stops matching fails too.
//
// Core packages (kvhash, kvevents, indexer with indexer/indexertest, loads,
// selector, queue, affinity, router, mocker, trace, tokenizer):
//   - no dependency, through any chain of imports (`go list -deps`), on the
//     network (net, net/http), processes (os/exec, os/signal), log/slog,
//     metrics (expvar, prometheus) or the transports (nats, zmq). os and log
//     are banned as direct imports only: fmt reaches os and msgpack reaches
//     log, so a transitive ban on them would fail every package and mean
//     nothing. The few exemptions (a third-party package whose imports are
//     not followed, a core file allowed os or the clock) are listed with
//     their reasons beside the checks;
//   - no clock (time.Now, time.Sleep, ...) and no global random source;
//   - no go statements, except in indexer.Concurrent.Run (parsed with
//     go/ast, reported as file:line);
//   - indexer, loads and mocker gate their self-checks behind
//     internal/invariants, and a mocker test shows the gate fires.
//
// Shells (layerBans in layers_test.go): the production runtime
// internal/app reaches no study package (internal/sim, internal/replay,
// the benchmark libraries) through any chain of imports.
//
// Every package: a doc.go with its package comment, at most 150 lines (a
// contract, not a lab notebook: experiment records go to
// docs/experiments/); .go files at most 800 lines (generated files
// exempt); comments name the design, not issue numbers; tests do not
// sleep; only cmd/ prints. The README is at most 400 lines
// (TestREADMELength, apart from TestDocLength).
//
// Commits after the base recorded in scripts/check-commits have a subject
// of at most 72 characters and a body (TestCheckCommits runs the script on
// a throwaway repository).
//
// TestCoreDeps and TestLayerDeps run `go list` and are skipped with -short.
package lint
