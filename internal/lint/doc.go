// Package lint holds the house rules of STYLE.md as a test (the pebble
// pattern): core packages do no I/O, read no clock and use no global random
// source; tests do not sleep; only cmd/ prints.
package lint
