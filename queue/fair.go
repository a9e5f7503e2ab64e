package queue

import (
	"fmt"
	"math"
	"strings"
)

// TenantHeader is the HTTP header that names a request's tenant (or
// program). The name is the Gateway API Inference Extension's flow-control
// fairness key, which llm-d's EPP and its program-aware fairness plugin also
// read, so clients of those gateways need no change.
const TenantHeader = "X-Gateway-Inference-Fairness-Id"

// OtherTenant is the shared bucket of tenants beyond Fair's bound.
const OtherTenant = "_other"

// Fair is a bounded queue that orders tenants by weighted deficit round
// robin and, within one tenant, by the policy of Queue. The cost of a
// request is one: admission frees one request slot at a time, so a tenant of
// weight w is released w requests per round while it has any waiting (its
// share of releases under overload is w / the sum of the waiting tenants'
// weights, whatever the others send). Fractional weights carry their deficit
// over rounds. A tenant's state is dropped when its last request leaves, so
// idle tenants cost nothing and earn no credit.
//
// At most maxTenants tenants wait in their own sub-queue at once; requests of
// further tenants share OtherTenant (weight 1), counted in Overflowed.
//
// Fair is pure and NOT safe for concurrent use.
type Fair[T any] struct {
	policy     Policy
	cap        int
	maxTenants int
	weights    map[string]float64
	subs       map[string]*sub[T]
	active     []*sub[T] // round-robin order of tenants with waiting requests
	cur        int
	byID       map[string]*sub[T]
	n          int
	overflowed uint64
}

type sub[T any] struct {
	tenant  string
	weight  float64
	deficit float64
	granted bool // this turn's quantum is already in deficit
	q       *Queue[T]
}

// NewFair returns an empty fair queue holding at most capacity requests in
// all (<= 0: unbounded) from at most maxTenants tenants with a sub-queue of
// their own (<= 0: unbounded). weights maps tenant to weight (> 0); tenants
// not in it weigh 1.
func NewFair[T any](policy Policy, capacity, maxTenants int, weights map[string]float64) (*Fair[T], error) {
	w := make(map[string]float64, len(weights))
	for t, v := range weights {
		if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
			return nil, fmt.Errorf("queue: tenant %q weight %v must be > 0", t, v)
		}
		w[t] = v
	}
	return &Fair[T]{policy: policy, cap: capacity, maxTenants: maxTenants, weights: w,
		subs: make(map[string]*sub[T]), byID: make(map[string]*sub[T])}, nil
}

// Weight is tenant's configured weight (1 when not configured).
func (f *Fair[T]) Weight(tenant string) float64 {
	if w, ok := f.weights[tenant]; ok {
		return w
	}
	return 1
}

// Bucket is the tenant whose sub-queue a request of tenant joins now: the
// tenant itself, or OtherTenant when the bound is reached.
func (f *Fair[T]) Bucket(tenant string) string {
	if _, ok := f.subs[tenant]; ok || f.maxTenants <= 0 || len(f.subs) < f.maxTenants {
		return tenant
	}
	return OtherTenant
}

// Push adds a request of tenant. It fails with ErrFull at capacity and with
// an error when the id is already queued.
func (f *Fair[T]) Push(tenant string, it Item[T]) error {
	if f.cap > 0 && f.n >= f.cap {
		return fmt.Errorf("%w: %d requests waiting", ErrFull, f.n)
	}
	if _, ok := f.byID[it.ID]; ok {
		return fmt.Errorf("queue: request %q already queued", it.ID)
	}
	b := f.Bucket(tenant)
	s, ok := f.subs[b]
	if !ok {
		s = &sub[T]{tenant: b, weight: f.Weight(b), q: New[T](f.policy, f.cap)}
	}
	if err := s.q.Push(it); err != nil {
		return err
	}
	if !ok {
		f.subs[b] = s
		f.active = append(f.active, s)
	}
	if b != tenant {
		f.overflowed++
	}
	f.byID[it.ID] = s
	f.n++
	return nil
}

// advance moves the round-robin pointer to the tenant that is released
// next, granting quanta on the way. It is idempotent, so Peek may call it.
func (f *Fair[T]) advance() *sub[T] {
	if f.n == 0 {
		return nil
	}
	for {
		s := f.active[f.cur]
		if !s.granted {
			s.deficit += s.weight
			s.granted = true
		}
		if s.deficit >= 1 {
			return s
		}
		s.granted = false
		f.cur = (f.cur + 1) % len(f.active)
	}
}

// Peek returns the request released next and its tenant, without removing it.
func (f *Fair[T]) Peek() (*Item[T], string, bool) {
	s := f.advance()
	if s == nil {
		return nil, "", false
	}
	it, _ := s.q.Peek()
	return it, s.tenant, true
}

// Pop removes and returns the request released next and its tenant.
func (f *Fair[T]) Pop() (Item[T], string, bool) {
	s := f.advance()
	if s == nil {
		return Item[T]{}, "", false
	}
	s.deficit--
	it, _ := s.q.Pop()
	f.taken(s, it.ID)
	return it, s.tenant, true
}

// Remove drops the request with id (a cancelled waiting request).
func (f *Fair[T]) Remove(id string) (Item[T], string, bool) {
	s, ok := f.byID[id]
	if !ok {
		return Item[T]{}, "", false
	}
	it, _ := s.q.Remove(id)
	f.taken(s, id)
	return it, s.tenant, true
}

// taken accounts a request leaving s and drops s when it is empty.
func (f *Fair[T]) taken(s *sub[T], id string) {
	delete(f.byID, id)
	f.n--
	if s.q.Len() > 0 {
		return
	}
	delete(f.subs, s.tenant)
	for i, a := range f.active {
		if a != s {
			continue
		}
		f.active = append(f.active[:i], f.active[i+1:]...)
		if i < f.cur {
			f.cur--
		}
		break
	}
	if f.cur >= len(f.active) {
		f.cur = 0
	}
}

// Tenant is the sub-queue of tenant (a bucket name), nil when it has no
// request waiting. It is for reading: changing it bypasses Fair's counts.
func (f *Fair[T]) Tenant(tenant string) *Queue[T] {
	if s, ok := f.subs[tenant]; ok {
		return s.q
	}
	return nil
}

// Contains reports whether id is waiting.
func (f *Fair[T]) Contains(id string) bool { _, ok := f.byID[id]; return ok }

// Len is the number of waiting requests.
func (f *Fair[T]) Len() int { return f.n }

// Tenants is the number of tenants with waiting requests.
func (f *Fair[T]) Tenants() int { return len(f.active) }

// Waiting is the number of requests of tenant (a bucket name) waiting.
func (f *Fair[T]) Waiting(tenant string) int {
	if s, ok := f.subs[tenant]; ok {
		return s.q.Len()
	}
	return 0
}

// Overflowed counts requests that joined OtherTenant because the tenant
// bound was reached.
func (f *Fair[T]) Overflowed() uint64 { return f.overflowed }

// String prints the whole state: totals, then each waiting tenant in
// round-robin order (">" marks the current one) with its weight, deficit
// and requests in release order.
func (f *Fair[T]) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "fair (%s, %d/%d, tenants %d/%d, overflowed %d)\n",
		f.policy, f.n, f.cap, len(f.active), f.maxTenants, f.overflowed)
	for i, s := range f.active {
		mark := " "
		if i == f.cur {
			mark = ">"
		}
		fmt.Fprintf(&b, "%s %s w=%.4g deficit=%.4g granted=%t:", mark, s.tenant, s.weight, s.deficit, s.granted)
		for _, id := range s.q.IDs() {
			fmt.Fprintf(&b, " %s", id)
		}
		b.WriteByte('\n')
	}
	return b.String()
}
