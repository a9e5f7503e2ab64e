// Package invariants gates expensive self-checks behind the "invariants"
// build tag (the pebble pattern): CI builds with -tags invariants, releases
// without, so the checks cost nothing in production.
package invariants
