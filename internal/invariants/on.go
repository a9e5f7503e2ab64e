//go:build invariants

package invariants

// Enabled is true when built with -tags invariants.
const Enabled = true
