// Package charts draws the PNG charts of kvrouter-study's reports with
// gonum/plot: for now sim's TTFT CDF and hit-rate bars (WriteSim). It
// lives apart from internal/sim because sim's tier and disaggregation
// parsers are linked by the kvrouter binary (internal/app, up), which must
// not carry the plotting code and its embedded fonts. Functions write files
// and share no state: safe for concurrent use on distinct paths.
package charts
