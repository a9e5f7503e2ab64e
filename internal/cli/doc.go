// Package cli binds the flags that several kvrouter commands share to
// their library configs: serve's flags (also kvrouter-epp's), the NATS
// connection, the storage tiers, the cost knobs and presets (also
// kvrouter-study sim's), the client bounds, and --config/--print-config.
// A flag bound here defaults to the field's current value, so app.Resolve
// can bind the same set again over a loaded file. The commands under cmd/
// only wire cobra to these binders and to the libraries that do the work.
//
// Nothing here is safe for concurrent use: flag binding happens once, in
// main, before any goroutine starts.
package cli
