package router

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/kvhash"
	"github.com/kvrouter/kvrouter/loads"
)

// Replicas (DESIGN.md §9): several routers form one routing tier. The
// prefix index converges from the KV event stream; load and session
// affinity do not, so every router reports its own bookings through
// Events.OnBooking and applies the others' with ApplyRemote. A remote
// booking enters the same load tracker as a local one (tagged with its
// origin), so it counts in every cost term and shows in
// Decision.Candidates like a local one. The transport (NATS, heartbeats)
// lives in a shell; nothing here knows about it.

// BookingKind is what a Booking reports.
type BookingKind uint8

const (
	// BookRoute: request ID was routed to Worker.
	BookRoute BookingKind = iota + 1
	// BookPrefillDone: its first output token came back.
	BookPrefillDone
	// BookFree: it finished, failed or was cancelled (or was swept).
	BookFree
	// BookBind: Session is bound to Worker.
	BookBind
)

var bookingNames = [...]string{"?", "route", "prefill-done", "free", "bind"}

func (k BookingKind) String() string {
	if int(k) < len(bookingNames) {
		return bookingNames[k]
	}
	return fmt.Sprintf("booking(%d)", k)
}

// Booking is one change of a router's load or affinity state, as another
// replica needs it to charge the same load (loads.Entry) or bind the same
// session.
type Booking struct {
	Kind BookingKind
	// ID is the request id (BookRoute, BookPrefillDone, BookFree), unique
	// within its origin.
	ID string
	// Worker is where the request went or the session is bound.
	Worker kvevents.Worker
	// Locals are the prompt's local block hashes (salted, as the index
	// sees them; BookRoute). In an OnBooking callback they are the
	// router's scratch: valid during the call only, copy to keep.
	Locals []uint64
	// ISL, PrefillTokens (isl - cached, as the origin computed it) and
	// OutputBlocks (Config.TrackOutputBlocks) of a BookRoute.
	ISL, PrefillTokens, OutputBlocks int
	// Session of a BookBind.
	Session string
}

// remotePrefix starts the tracker id of every remote booking, so remote
// and local request ids never collide.
const remotePrefix = "\x00"

func remoteKey(origin, id string) string { return remotePrefix + origin + "/" + id }

func isRemote(id string) bool { return strings.HasPrefix(id, remotePrefix) }

// ApplyRemote applies a booking that replica origin (non-empty, not this
// router's) reported, at now. BookRoute adds the request to the load
// tracker as origin's (in PolicyApprox it also records the blocks in the
// approximate index, as a local decision would); BookPrefillDone and
// BookFree update it; BookBind binds the session when affinity is on. A
// duplicate route or a free of an unknown request returns an error
// wrapping loads.ErrDuplicateRequest or loads.ErrUnknownRequest: sync is
// best effort, the caller counts and moves on. When the queue is on, call
// Release after a remote free as after a local one.
func (r *Router) ApplyRemote(origin string, b Booking, now time.Time) error {
	if origin == "" {
		return fmt.Errorf("%w: remote booking without origin", ErrBadRequest)
	}
	key := remoteKey(origin, b.ID)
	r.lock()
	defer r.mu.Unlock()
	switch b.Kind {
	case BookRoute:
		if b.PrefillTokens < 0 || b.OutputBlocks < 0 {
			return fmt.Errorf("%w: remote booking %q of %s has negative loads", ErrBadRequest, b.ID, origin)
		}
		p := getPending() // for its prefix-id buffer: the blocks' names (prepare)
		p.idBuf = kvhash.AppendPrefixIDs(p.idBuf[:0], b.Locals)
		err := r.loads.Add(loads.Entry{ID: key, Worker: b.Worker, Blocks: p.idBuf,
			PrefillTokens: b.PrefillTokens, OutputBlocks: b.OutputBlocks, Origin: origin}, now)
		if err != nil {
			putPending(p)
			return fmt.Errorf("router: remote booking of %s: %w", origin, err)
		}
		if r.cfg.Policy == PolicyApprox && len(b.Locals) > 0 {
			r.approx.Insert(b.Worker, b.Locals, now)
		}
		// Another replica's decision predicts a cache like our own do.
		if r.predict != nil && len(b.Locals) > 0 {
			r.predict.InsertSeq(b.Worker, p.idBuf, now)
		}
		putPending(p)
	case BookPrefillDone:
		if err := r.loads.PrefillDone(key, now); err != nil {
			return fmt.Errorf("router: remote booking of %s: %w", origin, err)
		}
	case BookFree:
		if err := r.loads.Free(key); err != nil {
			return fmt.Errorf("router: remote booking of %s: %w", origin, err)
		}
	case BookBind:
		if err := r.checkSession(b.Session); err != nil {
			return fmt.Errorf("%w: remote bind of %s: %w", ErrBadRequest, origin, err)
		}
		if r.cfg.Affinity.Enabled && b.Session != "" {
			r.aff.Bind(b.Session, b.Worker, now)
		}
	default:
		return fmt.Errorf("%w: remote booking kind %d", ErrBadRequest, b.Kind)
	}
	return nil
}

// DropOrigin releases every booking of replica origin (its heartbeats
// stopped: DESIGN.md §9) and returns how many it released.
func (r *Router) DropOrigin(origin string) int {
	r.lock()
	defer r.mu.Unlock()
	return len(r.loads.RemoveOrigin(origin))
}

// LoadBreakdown returns every busy worker+rank's load split into this
// router's part and each remote replica's (loads.Tracker.Breakdown), for a
// debug view. It walks every active request: not for the routing path.
func (r *Router) LoadBreakdown() []loads.WorkerLoad {
	r.lock()
	defer r.mu.Unlock()
	return r.loads.Breakdown()
}

// outputBlocks is the decode load charged for req's output, in blocks
// (Config.TrackOutputBlocks; 0 when off).
func (r *Router) outputBlocks(req *Request) int {
	if !r.cfg.TrackOutputBlocks {
		return 0
	}
	// NB: not (n+B-1)/B: n near 2^63 would wrap negative.
	n, B := req.OutputTokens, r.cfg.BlockSize
	return n/B + min(n%B, 1)
}

// bookRoute reports a dispatched decision (and its session binding)
// through OnBooking; p must still hold the request's hashes.
func (r *Router) bookRoute(p *pending, d *Decision) {
	r.events.OnBooking(Booking{Kind: BookRoute, ID: d.RequestID, Worker: d.Worker, Locals: p.locals,
		ISL: d.ISL, PrefillTokens: d.PrefillTokens, OutputBlocks: r.outputBlocks(&p.req)})
	if r.cfg.Affinity.Enabled && p.req.Session != "" {
		r.events.OnBooking(Booking{Kind: BookBind, Worker: d.Worker, Session: p.req.Session})
	}
}

// releasedBookings returns the bookings of a decision Release dispatched,
// with the hashes copied (p goes back to the pool under the lock).
func (r *Router) releasedBookings(dst []Booking, p *pending, d *Decision) []Booking {
	if r.events.OnBooking == nil {
		return dst
	}
	dst = append(dst, Booking{Kind: BookRoute, ID: d.RequestID, Worker: d.Worker, Locals: slices.Clone(p.locals),
		ISL: d.ISL, PrefillTokens: d.PrefillTokens, OutputBlocks: r.outputBlocks(&p.req)})
	if r.cfg.Affinity.Enabled && p.req.Session != "" {
		dst = append(dst, Booking{Kind: BookBind, Worker: d.Worker, Session: p.req.Session})
	}
	return dst
}

// localWorker returns the worker of local request id when OnBooking wants
// it (r.mu held).
func (r *Router) localWorker(id string) (kvevents.Worker, bool) {
	if r.events.OnBooking == nil {
		return kvevents.Worker{}, false
	}
	e, _, ok := r.loads.Request(id)
	return e.Worker, ok
}

// localIDs removes remote bookings' ids from ids, in place.
func localIDs(ids []string) []string {
	return slices.DeleteFunc(ids, isRemote)
}
