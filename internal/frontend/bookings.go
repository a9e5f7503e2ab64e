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

	"github.com/kvrouter/kvrouter/internal/bounds"
	"github.com/kvrouter/kvrouter/internal/oai"
)

// bookings are the /route decisions kept with track:true. Only these can
// be driven by POST /route/{id}/prefill_done and /free, and only by the
// caller that made them: ids are random (unguessable, unlike the
// sequential ids of proxied requests, which the lifecycle endpoints do
// not reach), each caller holds at most Hardening.MaxTrackedPerKey, all
// callers together at most Hardening.MaxBookings and MaxBookingBytes
// (store, exported as kvrouter_store_*{store="bookings"}), and a booking
// not freed within Hardening.BookingTTL is released.
type bookings struct {
	mu       sync.Mutex
	byID     map[string]*booking
	perOwner map[string]int // reserved or held
	store    *bounds.Store  // reserved or held, all owners
}

type booking struct {
	owner string
	bytes int64
	timer *time.Timer
}

// bookingOverhead is a booking's fixed cost in bytes beyond its id,
// owner and block hashes: the map entries, the timer and the router's
// load record (an estimate; the store's byte bound is what it caps).
const bookingOverhead = 512

// bookingIDLen is the length of newBookingID's ids.
const bookingIDLen = len("bk-") + 32

// bookingBytes estimates what a booking of a prompt of n tokens holds:
// the load tracker copies its block hashes (8 bytes a block).
func (s *Server) bookingBytes(owner string, n int) int64 {
	return bookingOverhead + int64(len(owner)+bookingIDLen) + 8*int64(n/max(s.cfg.Router.BlockSize, 1)+1)
}

// owner identifies the caller: its API key (hashed; the key itself is a
// secret) when the client API checks keys, else its address. NB: without
// --api-key a bearer header is unverified (any value passes), so it must
// not name the caller: one client could take a fresh booking quota per
// request. Behind a proxy every caller shares the proxy's address, and
// so one quota: the global bounds (MaxBookings, MaxBookingBytes) still
// hold.
func (s *Server) owner(r *http.Request) string {
	if k, ok := bearer(r); ok && k != "" && len(s.cfg.APIKeys) > 0 {
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

// reserveBooking takes one of owner's tracked slots (size bytes, from
// bookingBytes) and returns a fresh id, or a 429 when owner holds its cap
// or all callers together hold theirs.
func (s *Server) reserveBooking(owner string, size int64) (string, *oai.Error) {
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
	if !s.bk.store.Fits(1, size) {
		s.m.limitRejects.WithLabelValues("bookings_total").Inc()
		return "", &oai.Error{Status: http.StatusTooManyRequests, Type: oai.TypeInvalidRequest, Code: "too_many_bookings",
			Message: "the router holds as many tracked bookings as it keeps; free some (POST /route/{id}/free) or retry later"}
	}
	s.bk.perOwner[owner]++
	s.bk.store.Add(1, size)
	return newBookingID(), nil
}

// unreserve gives back a slot whose routing failed.
func (s *Server) unreserve(owner string, size int64) {
	s.bk.mu.Lock()
	defer s.bk.mu.Unlock()
	s.bk.store.Add(-1, -size)
	if s.bk.perOwner[owner]--; s.bk.perOwner[owner] <= 0 {
		delete(s.bk.perOwner, owner)
	}
}

// holdBooking records a tracked decision; it expires after BookingTTL.
func (s *Server) holdBooking(id, owner string, size int64) {
	b := &booking{owner: owner, bytes: size}
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
	s.bk.store.Add(-1, -b.bytes)
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
	id, who := r.PathValue("id"), s.owner(r)
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
	s.m.request(ep, "200")
	writeJSON(w, http.StatusOK, map[string]string{"request_id": id, "status": "ok"})
}
