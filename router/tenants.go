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

// TenantStats is the fair queue's tenant table.
type TenantStats struct {
	// Tenants is the number of tenants with requests waiting.
	Tenants int
	// Overflowed counts requests that joined the shared bucket because
	// QueueConfig.MaxTenants tenants were already waiting.
	Overflowed uint64
}

// QueueTenants returns the fair queue's tenant table (zero when the queue
// is off).
func (r *Router) QueueTenants() TenantStats {
	r.mu.Lock() // no load or prediction read: needs no settle
	defer r.mu.Unlock()
	if r.queue == nil {
		return TenantStats{}
	}
	return TenantStats{Tenants: r.queue.Tenants(), Overflowed: r.queue.Overflowed()}
}
