package router

// tenant is the fair queue's key for req: its tenant when fairness is on,
// else "" for everyone (one sub-queue: the plain policy order).
func (r *Router) tenant(req *Request) string {
	if !r.cfg.Queue.Fair {
		return ""
	}
	return req.Tenant
}

// queueString prints the wait queue: the plain queue's form when fairness
// is off, else every tenant's sub-queue.
func (r *Router) queueString() string {
	if r.cfg.Queue.Fair {
		return r.queue.String()
	}
	if q := r.queue.Tenant(""); q != nil {
		return q.String()
	}
	return "queue: empty\n"
}
