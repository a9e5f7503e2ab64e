package app

import (
	"fmt"
	"net"
	"net/url"

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

// joinKick is a Membership that kicks the bind subscriber after each
// join, so the held events of the new worker's pod are applied at once.
type joinKick struct {
	discovery.Membership
	kick func()
}

func (j joinKick) Join(w discovery.Worker) error {
	err := j.Membership.Join(w)
	if err == nil {
		j.kick()
	}
	return err
}
