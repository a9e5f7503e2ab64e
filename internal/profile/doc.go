// Package profile writes pprof profiles of a whole run for the study
// commands' --cpuprofile and --memprofile flags: StartCPU before the run,
// its stop function after; WriteAllocs once the run is over.
//
// A CPU profile is process-wide (runtime/pprof allows one at a time), so
// StartCPU fails while another is running. Safe for concurrent use only in
// that sense: calls do not race, but only one CPU profile can be active.
package profile
