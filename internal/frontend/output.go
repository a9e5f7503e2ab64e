package frontend

import (
	"bytes"
	"strconv"

	"github.com/kvrouter/kvrouter/internal/oai"
	"github.com/kvrouter/kvrouter/router"
)

// HeaderExpectedOutput is the client's hint of a request's output length
// in tokens, charged as future decode load when Router.TrackOutputBlocks
// is on (Dynamo's output-length awareness).
const HeaderExpectedOutput = "X-Kvrouter-Expected-Output-Tokens"

// outputWindow is the window, in completed requests, of the per-model
// output-length average (the same as the simulator's, sim.OutputWindow).
const outputWindow = 100

// parseExpectedOutput parses the hint header ("" = none: -1).
func parseExpectedOutput(v string) (int, *oai.Error) {
	if v == "" {
		return -1, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, oai.BadRequest(HeaderExpectedOutput, "expected output tokens must be an integer >= 0")
	}
	return n, nil
}

// expectedOutput is the output length the router charges for j
// (Router.TrackOutputBlocks): the client's hint, else the running average
// of the model's completed streams (router.OutputAverage), each capped by
// max_tokens; max_tokens before the model's first completion.
func (s *Server) expectedOutput(j *job) int {
	if s.outAvg == nil {
		return j.maxTokens
	}
	n := j.hint
	if n < 0 {
		avg, ok := s.outAvg.Lookup(j.model)
		if !ok {
			return j.maxTokens
		}
		n = avg
	}
	if j.maxTokens > 0 {
		n = min(n, j.maxTokens)
	}
	return n
}

// isToken reports whether a streamed event carries output (not the
// trailing usage-only chunk).
func isToken(data []byte) bool { return !bytes.Contains(data, []byte(`"choices":[]`)) }

func newOutputAverage(rc router.Config) *router.OutputAverage {
	if !rc.TrackOutputBlocks {
		return nil
	}
	return router.NewOutputAverage(outputWindow)
}
