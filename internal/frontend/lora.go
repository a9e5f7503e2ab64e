package frontend

import "github.com/kvrouter/kvrouter/selector"

// loraTierNames name selector's LoRA tiers in /route's breakdown.
var loraTierNames = [...]string{selector.LoRATierLoaded: "loaded", selector.LoRATierFree: "free-slot", selector.LoRATierAny: "full"}

// loraTier fills c's LoRA tier for adapter lora from what the pool knows
// of the worker (the same fields the router's candidates carry).
func (s *Server) loraTier(c *Candidate, lora string) {
	if lora == "" {
		return
	}
	wk, ok := s.pool.Get(c.Worker)
	if !ok || !wk.Info.LoRAKnown {
		return
	}
	sc := selector.Candidate{LoRAKnown: true, LoRAs: wk.Info.LoRAs, MaxLoRAs: wk.Info.MaxLoRAs}
	c.LoRATier = loraTierNames[selector.LoRATier(&sc, lora)]
}
