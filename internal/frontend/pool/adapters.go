package pool

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"

	"github.com/kvrouter/kvrouter/internal/bounds"
	"github.com/kvrouter/kvrouter/router"
)

// LoRA adapters (DESIGN.md §1 salts): a request whose model field names a
// LoRA adapter is hashed with the adapter's name folded into the seed
// (kvhash.Seed(lora, "")), the same salt the KV event decoder applies to
// the engine's BlockStored events that carry lora_name. vLLM keys an
// adapter's blocks by its lora_name (an extra key of the block hash), and
// lora_name is the name the adapter is served under, i.e. the request's
// model. The router learns which model names are adapters from
// Config.LoRAAdapters and from the engines' GET /v1/models, where vLLM
// lists each adapter with "parent" set to its base model.

// adapterSet is the set of known adapter names. Safe for concurrent use.
// The names learnt from engines are the bounded store "lora_adapters":
// at most maxLearntAdapters, each name at most maxAdapterName bytes (a
// longer one is not learnt; new ones beyond the count are ignored, and
// logged once).
type adapterSet struct {
	mu     sync.RWMutex
	names  map[string]bool
	learnt *bounds.Store
	full   bool // learn refused a name
	warned bool // and that was logged
}

// Bounds of the adapter names learnt from engines' /v1/models (each
// answer read up to 4 MiB, learnt at every poll).
const (
	maxLearntAdapters = 4096
	maxAdapterName    = 1024
	adapterCost       = 64 // a map entry beyond its name
)

func newAdapterSet(configured []string) *adapterSet {
	a := &adapterSet{names: map[string]bool{},
		learnt: bounds.New("lora_adapters", maxLearntAdapters, maxLearntAdapters*(maxAdapterName+adapterCost))}
	for _, n := range configured {
		a.names[n] = true
	}
	return a
}

// lora returns model when it names a known adapter, else "".
func (a *adapterSet) lora(model string) string {
	if model == "" {
		return ""
	}
	a.mu.RLock()
	defer a.mu.RUnlock()
	if a.names[model] {
		return model
	}
	return ""
}

// learn adds the adapters of one /v1/models answer and returns the names
// it had not seen.
func (a *adapterSet) learn(models []engineModel) []string {
	var added []string
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, m := range models {
		if m.Parent != nil && *m.Parent != "" && *m.Parent != m.ID && !a.names[m.ID] {
			b := int64(len(m.ID) + adapterCost)
			if len(m.ID) > maxAdapterName || !a.learnt.Fits(1, b) {
				a.full = true
				continue
			}
			a.learnt.Add(1, b)
			a.names[m.ID] = true
			added = append(added, m.ID)
		}
	}
	return added
}

// warnOnce reports whether learn has refused a name, the first time only.
func (a *adapterSet) warnOnce() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	w := a.full && !a.warned
	a.warned = a.warned || a.full
	return w
}

// LoRA returns model when it names a known adapter, configured or
// learnt from the engines, else "".
func (p *Pool) LoRA(model string) string { return p.adapters.lora(model) }

// engineModel is one entry of an engine's GET /v1/models.
type engineModel struct {
	ID     string  `json:"id"`
	Root   string  `json:"root"`
	Parent *string `json:"parent"`
}

// fetchModels asks base/v1/models.
func (p *Pool) fetchModels(ctx context.Context, base string) ([]engineModel, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/models", nil)
	if err != nil {
		return nil, err
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		return nil, fmt.Errorf("frontend: %s/v1/models: %s", base, resp.Status)
	}
	models, err := decodeModels(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("frontend: %s/v1/models: %w", base, err)
	}
	return models, nil
}

// maxModelsAnswer bounds the GET /v1/models answer read (a longer one
// is cut there and fails to decode).
const maxModelsAnswer = 4 << 20

// decodeModels decodes a GET /v1/models answer of at most maxModelsAnswer
// bytes.
func decodeModels(r io.Reader) ([]engineModel, error) {
	var list struct {
		Data []engineModel `json:"data"`
	}
	if err := json.NewDecoder(io.LimitReader(r, maxModelsAnswer)).Decode(&list); err != nil {
		return nil, err
	}
	return list.Data, nil
}

// learnAdapters reads a worker's /v1/models and logs new adapters.
func (p *Pool) learnAdapters(ctx context.Context, w *Worker) {
	models, err := p.fetchModels(ctx, w.URL)
	if err != nil {
		return
	}
	for _, name := range p.adapters.learn(models) {
		p.log.Info("LoRA adapter learnt: requests for it are hashed with its name as salt", "adapter", name, "worker", w.ID)
	}
	p.setLoaded(w.ID, p.adapters.loaded(models))
	if p.adapters.warnOnce() {
		p.log.Warn("LoRA adapter names beyond the bounds not learnt", "worker", w.ID,
			"max_adapters", maxLearntAdapters, "max_name_bytes", maxAdapterName)
	}
}

// loaded returns the adapters of one /v1/models answer that the set
// knows (so the bounds of "lora_adapters" bound them too), at most
// router.MaxWorkerLoRAs, sorted; never nil.
func (a *adapterSet) loaded(models []engineModel) []string {
	out := []string{}
	a.mu.RLock()
	defer a.mu.RUnlock()
	for _, m := range models {
		if len(out) == router.MaxWorkerLoRAs {
			break
		}
		if m.Parent != nil && *m.Parent != "" && *m.Parent != m.ID && a.names[m.ID] {
			out = append(out, m.ID)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// setLoaded records the adapters an engine lists as loaded on worker id
// (the router's LoRA preference: router.WorkerInfo.LoRAs), unless the
// worker's registration announced its own. vLLM's /v1/models lists the
// adapters the engine serves (--lora-modules and those loaded at run
// time); which of them sit in one of its --max-loras GPU slots at a given
// moment it does not say, so "loaded" means "served without a load call".
func (p *Pool) setLoaded(id uint64, loaded []string) {
	p.mu.Lock()
	cur, ok := p.workers[id]
	if !ok || cur.AnnouncedLoRAs || (cur.Info.LoRAKnown && slices.Equal(cur.Info.LoRAs, loaded)) {
		p.mu.Unlock()
		return
	}
	cur.Info.LoRAKnown, cur.Info.LoRAs = true, loaded
	info, down := cur.Info, cur.down
	p.mu.Unlock()
	if !down {
		_ = p.rt.AddWorker(info)
	}
}
