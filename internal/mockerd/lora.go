package mockerd

import (
	"net/http"
	"slices"
	"sync"

	"github.com/kvrouter/kvrouter/internal/oai"
	"github.com/kvrouter/kvrouter/mocker"
	"github.com/prometheus/client_golang/prometheus"
)

// LoRA adapters: with Config.MaxLoRAs > 0 the mocker serves, beside its
// base model, any model name as a LoRA adapter of it, loaded on first
// use into one of MaxLoRAs slots (the least recently used one is
// unloaded when all are taken), like vLLM started with --enable-lora and
// --max-loras loading adapters at run time. GET /v1/models lists the
// loaded adapters with parent and root set, as vLLM does, so the router
// learns where each is loaded. An adapter's blocks hash with its name as
// seed (mocker.Request.LoRA).

// MaxLoRAName bounds an adapter name the mocker accepts (longer: 404).
const MaxLoRAName = 1024

// MaxLoRASlots bounds Config.MaxLoRAs (the router keeps at most
// router.MaxWorkerLoRAs adapters per worker).
const MaxLoRASlots = 1024

// loraSlots is the engine's adapter slots (mocker.LoRASlots; loads are
// instant here). Safe for concurrent use.
type loraSlots struct {
	mu    sync.Mutex
	slots mocker.LoRASlots
	loads prometheus.Counter
}

func newLoRASlots(max int, reg prometheus.Registerer) *loraSlots {
	l := &loraSlots{slots: mocker.LoRASlots{Max: max}, loads: prometheus.NewCounter(prometheus.CounterOpts{Name: "kvrouter_mocker_lora_loads_total",
		Help: "LoRA adapters loaded into a slot (first use, or again after being unloaded for another)."})}
	reg.MustRegister(l.loads)
	return l
}

// use marks name used, loading it (and unloading the least recently used
// adapter when every slot is taken) if it is not loaded.
func (l *loraSlots) use(name string) {
	l.mu.Lock()
	_, loaded := l.slots.Use(name, 0, 0)
	l.mu.Unlock()
	if loaded {
		l.loads.Inc()
	}
}

// list returns the loaded adapters, sorted.
func (l *loraSlots) list() []string {
	l.mu.Lock()
	out := l.slots.Loaded()
	l.mu.Unlock()
	slices.Sort(out)
	return out
}

// checkModel accepts the base model (or none) and, with LoRA slots, any
// other name as an adapter, which it loads; it returns the adapter ("" =
// base model) or a 404 as vLLM answers an unknown model.
func (s *Server) checkModel(model string) (string, *oai.Error) {
	if model == "" || model == s.cfg.Model {
		return "", nil
	}
	if s.cfg.MaxLoRAs > 0 && len(model) <= MaxLoRAName {
		s.loras.use(model)
		return model, nil
	}
	return "", &oai.Error{Status: http.StatusNotFound, Type: oai.TypeNotFound, Code: "model_not_found",
		Message: "The model `" + model + "` does not exist; the model served here is `" + s.cfg.Model + "`."}
}

func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	list := oai.ModelList{Object: "list", Data: []oai.Model{{
		ID: s.cfg.Model, Object: "model", Created: 0, OwnedBy: "kvrouter", MaxModelLen: s.cfg.MaxModelLen, Root: s.cfg.Model,
	}}}
	if s.cfg.MaxLoRAs > 0 {
		for _, a := range s.loras.list() {
			list.Data = append(list.Data, oai.Model{ID: a, Object: "model", OwnedBy: "kvrouter", MaxModelLen: s.cfg.MaxModelLen,
				Root: a, Parent: s.cfg.Model})
		}
	}
	writeJSON(w, list)
}
