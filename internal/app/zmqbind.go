package app

import (
	"fmt"
	"net"
	"net/url"
	"sync"

	"github.com/kvrouter/kvrouter/internal/discovery"
	"github.com/kvrouter/kvrouter/internal/eventplane/zmqsub"
)

// resolvePod maps a bind-topology topic's pod and model to a worker
// (serve --zmq-bind): the worker whose Pod option is pod, else whose URL
// host:port is pod, else the only one whose URL host is pod (vLLM
// deployments set the topic to kv@${POD_IP}@<model>). The model must be
// the worker's Model, or routerModel when the worker names none; an empty
// topic model is not checked.
func resolvePod(ws []discovery.Worker, pod, model, routerModel string) (uint64, error) {
	var byHost []discovery.Worker
	var found *discovery.Worker
	for i := range ws {
		w := &ws[i]
		if w.Pod == pod {
			found = w
			break
		}
		u, err := url.Parse(w.URL)
		if err != nil {
			continue
		}
		if w.Pod == "" && u.Host == pod {
			found = w
			break
		}
		if w.Pod == "" && u.Hostname() == pod {
			byHost = append(byHost, *w)
		}
	}
	if found == nil {
		switch len(byHost) {
		case 0:
			return 0, fmt.Errorf("%w %q", zmqsub.ErrUnknownPod, pod)
		case 1:
			found = &byHost[0]
		default:
			// Several engines on one host: only host:port or pod= tells
			// them apart.
			return 0, fmt.Errorf("%w %q: %d workers on that host; give each --worker a pod= option", zmqsub.ErrUnknownPod, pod, len(byHost))
		}
	}
	want := found.Model
	if want == "" {
		want = routerModel
	}
	if model != "" && want != "" && model != want {
		return found.ID, fmt.Errorf("%w: topic model %q, worker %d serves %q", zmqsub.ErrModelMismatch, model, found.ID, want)
	}
	return found.ID, nil
}

// validBind checks one --zmq-bind endpoint.
func validBind(ep string) error {
	u, err := url.Parse(ep)
	if err != nil || u.Scheme != "tcp" {
		return fmt.Errorf("serve: --zmq-bind %q: want tcp://HOST:PORT", ep)
	}
	if _, _, err := net.SplitHostPort(u.Host); err != nil {
		return fmt.Errorf("serve: --zmq-bind %q: %w", ep, err)
	}
	return nil
}

// podCache memoizes resolvePod per topic pod and model (every bind-mode
// message asks; the membership changes rarely); any join or leave empties
// it.
type podCache struct {
	mu  sync.Mutex
	m   map[[2]string]podAnswer
	gen uint64 // resets so far
}

type podAnswer struct {
	id  uint64
	err error
}

func (c *podCache) resolve(pod, model string, slow func() (uint64, error)) (uint64, error) {
	k := [2]string{pod, model}
	c.mu.Lock()
	a, ok := c.m[k]
	gen := c.gen
	c.mu.Unlock()
	if ok {
		return a.id, a.err
	}
	id, err := slow()
	c.mu.Lock()
	// NB: a reset while slow ran (a join) may have made its answer stale:
	// kept, an unknown pod would stay unknown after its worker joined.
	if c.gen == gen {
		if c.m == nil || len(c.m) > 4096 { // bounded: topics are chosen by whoever connects
			c.m = map[[2]string]podAnswer{}
		}
		c.m[k] = podAnswer{id, err}
	}
	c.mu.Unlock()
	return id, err
}

func (c *podCache) reset() {
	c.mu.Lock()
	c.m = nil
	c.gen++
	c.mu.Unlock()
}

// joinKick is a Membership that calls changed after each join or leave,
// and kick after each join, so the events held for the new worker
// (bind-mode ZMQ, NATS gate) are applied at once.
type joinKick struct {
	discovery.Membership
	changed func()
	kick    func(id uint64)
}

func (j joinKick) Join(w discovery.Worker) error {
	err := j.Membership.Join(w)
	j.changed()
	if err == nil {
		j.kick(w.ID)
	}
	return err
}

func (j joinKick) Leave(id uint64) {
	j.Membership.Leave(id)
	j.changed()
}
