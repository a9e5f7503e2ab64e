// Command kvrouter is a KV-cache-aware router for fleets of LLM inference
// workers. Each subcommand lives in its own file and only binds flags to a
// library's config; the work is done by the packages at the module root and
// under internal/ (serve, mocker and bridge: internal/app's runtimes, which
// read flags, KVROUTER_* environment variables and --config files through
// app.Resolve). The flag binders it shares with kvrouter-epp and
// kvrouter-study are in internal/cli. The endpoint picker (kvrouter-epp)
// and the study tools (kvrouter-study: sim, replay, bench, trace) are
// binaries of their own, so that this one links no Kubernetes, gRPC or
// plotting code (internal/lint checks it). Each command with many flags
// declares its help sections beside them (internal/clihelp: --help,
// --help-all).
package main
