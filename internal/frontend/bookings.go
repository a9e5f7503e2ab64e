package frontend

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kvrouter/kvrouter/internal/frontend/oai"
)

// bookings are the /route decisions kept with track:true. Only these can
// be driven by POST /route/{id}/prefill_done and /free, and only by the
// caller that made them: ids are random (unguessable, unlike the
// sequential ids of proxied requests, which the lifecycle endpoints do
// not reach), each caller holds at most Hardening.MaxTrackedPerKey, and a
// booking not freed within Hardening.BookingTTL is released.
type bookings struct {
	mu       sync.Mutex
	byID     map[string]*booking
	perOwner map[string]int // reserved or held
}

type booking struct {
	owner string
	timer *time.Timer
}

// owner identifies the caller: its API key (hashed; the key itself is a
// secret) or, when the API is open, its address.
func owner(r *http.Request) string {
	if k, ok := bearer(r); ok && k != "" {
		h := sha256.Sum256([]byte(k))
		return "key:" + hex.EncodeToString(h[:8])
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return "addr:" + host
}

// newBookingID is 128 random bits.
func newBookingID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return "bk-" + hex.EncodeToString(b[:])
}

// reserveBooking takes one of owner's tracked slots and returns a fresh
// id, or a 429 when owner holds its cap.
func (s *Server) reserveBooking(owner string) (string, *oai.Error) {
	s.bk.mu.Lock()
	defer s.bk.mu.Unlock()
	if s.bk.perOwner == nil {
		s.bk.perOwner, s.bk.byID = map[string]int{}, map[string]*booking{}
	}
	if c := s.cfg.Hardening.MaxTrackedPerKey; c > 0 && s.bk.perOwner[owner] >= c {
		s.m.limitRejects.WithLabelValues("tracked_bookings").Inc()
		return "", &oai.Error{Status: http.StatusTooManyRequests, Type: oai.TypeInvalidRequest, Code: "too_many_bookings",
			Message: "this caller holds " + strconv.Itoa(c) + " tracked bookings; free some (POST /route/{id}/free) first"}
	}
	s.bk.perOwner[owner]++
	return newBookingID(), nil
}

// unreserve gives back a slot whose routing failed.
func (s *Server) unreserve(owner string) {
	s.bk.mu.Lock()
	defer s.bk.mu.Unlock()
	if s.bk.perOwner[owner]--; s.bk.perOwner[owner] <= 0 {
		delete(s.bk.perOwner, owner)
	}
}

// holdBooking records a tracked decision; it expires after BookingTTL.
func (s *Server) holdBooking(id, owner string) {
	b := &booking{owner: owner}
	s.bk.mu.Lock()
	s.bk.byID[id] = b
	if ttl := s.cfg.Hardening.BookingTTL; ttl > 0 {
		b.timer = time.AfterFunc(ttl, func() {
			if s.dropBooking(id, owner) {
				_ = s.rt.Free(id, time.Now())
				s.m.swept.Inc()
				s.kickRelease()
			}
		})
	}
	s.bk.mu.Unlock()
}

// dropBooking forgets id if owner holds it.
func (s *Server) dropBooking(id, owner string) bool {
	s.bk.mu.Lock()
	defer s.bk.mu.Unlock()
	b, ok := s.bk.byID[id]
	if !ok || b.owner != owner {
		return false
	}
	if b.timer != nil {
		b.timer.Stop()
	}
	delete(s.bk.byID, id)
	if s.bk.perOwner[owner]--; s.bk.perOwner[owner] <= 0 {
		delete(s.bk.perOwner, owner)
	}
	return true
}

// heldBy reports whether owner holds the tracked booking id.
func (s *Server) heldBy(id, owner string) bool {
	s.bk.mu.Lock()
	defer s.bk.mu.Unlock()
	b, ok := s.bk.byID[id]
	return ok && b.owner == owner
}

func (s *Server) handleRouteLifecycle(w http.ResponseWriter, r *http.Request) {
	id, who := r.PathValue("id"), owner(r)
	free := strings.HasSuffix(r.URL.Path, "/free")
	ep := "route_prefill_done"
	if free {
		ep = "route_free"
	}
	// Unknown, expired and other callers' bookings look alike: a caller
	// learns nothing about ids it does not hold.
	notFound := func() {
		s.fail(w, ep, oai.Errorf(http.StatusNotFound, oai.TypeNotFound, "no tracked booking "+strconv.Quote(id)+" of this caller"))
	}
	now := time.Now()
	var err error
	switch {
	case free && s.dropBooking(id, who):
		err = s.rt.Free(id, now)
	case !free && s.heldBy(id, who):
		err = s.rt.PrefillDone(id, now)
	default:
		notFound()
		return
	}
	s.kickRelease()
	if err != nil {
		notFound()
		return
	}
	s.m.requests.WithLabelValues(ep, "200").Inc()
	writeJSON(w, http.StatusOK, map[string]string{"request_id": id, "status": "ok"})
}
