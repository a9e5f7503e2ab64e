// Package clihelp gives a cobra command help in named sections, and
// did-you-mean suggestions for mistyped flag and environment names.
//
// A command declares its sections once, beside the command (a Help value:
// each Section names the flags a first deployment sets, Shown, and the
// rest, More) and calls Apply. Then:
//
//   - --help prints the Shown flags under their section names and a footer
//     counting the flags it left out (and, for a command that reads the
//     environment, how every flag maps to a KVROUTER_* variable and the
//     --config file);
//   - --help-all prints every flag in the same sections; a flag no section
//     lists comes last under "Other" (Check reports it, so a test can keep
//     the lists complete);
//   - an unknown --flag fails with "unknown flag: --x (did you mean --y?)",
//     and a flag of Help.Renamed with the name that replaced it.
//
// Suggest is the edit-distance match behind both suggestions; the app
// package uses it for unknown KVROUTER_* variables.
//
// Nothing here keeps state between calls; Apply mutates the command it is
// given, as cobra's setters do, and is meant for construction time.
package clihelp
