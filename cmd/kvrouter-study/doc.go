// Command kvrouter-study holds kvrouter's study tools: the deterministic
// fleet simulator (sim), trace replay against a live router (replay), the
// index, event-plane and frontend benchmarks (bench) and trace synthesis
// (trace), with their PNG charts. They live apart from the kvrouter binary
// so that it links none of the plotting code. Each subcommand only binds
// flags to a library's config (internal/sim, internal/replay,
// internal/benchindex, internal/charts, ...).
package main
