package frontend

import (
	"io"
	"net/http"

	"github.com/kvrouter/kvrouter/internal/bounds"
	"github.com/kvrouter/kvrouter/internal/oai"
)

// The proxied requests and what their relays buffer (SSE events, folded
// and JSON answers) are the bounded store "stream_buffers":
// Hardening.MaxStreams entries, MaxStreamBufferBytes bytes.

func newStreamBuffers(h Hardening) *bounds.Store {
	return bounds.New("stream_buffers", int64(positive(h.MaxStreams)), positive(h.MaxStreamBufferBytes))
}

// acquireStream takes a stream entry for a proxied request, or answers 503
// when MaxStreams are taken. Add, then check: concurrent admissions see
// each other (both may be refused at the limit; none slips past it).
func (s *Server) acquireStream() (release func(), e *oai.Error) {
	s.sb.Add(1, 0)
	if n, _ := s.sb.Size(); !withinLimit(n, s.cfg.Hardening.MaxStreams) {
		s.sb.Add(-1, 0)
		s.m.limitRejects.WithLabelValues("streams").Inc()
		return nil, &oai.Error{Status: http.StatusServiceUnavailable, Type: oai.TypeServer, Code: "too_many_streams",
			Message: "too many requests in flight; retry shortly"}
	}
	return func() { s.sb.Add(-1, 0) }, nil
}

func withinLimit[T int | int64](n int64, limit T) bool { return limit <= 0 || n <= int64(limit) }

// streamBuf is one relay's share of the store's bytes; release returns it.
type streamBuf struct {
	st   *bounds.Store
	held int64
}

// grow takes b more bytes if the store's byte bound allows them.
func (sb *streamBuf) grow(b int64) bool {
	sb.st.Add(0, b)
	_, lim := sb.st.Limits()
	if _, n := sb.st.Size(); lim > 0 && n > lim {
		sb.st.Add(0, -b)
		return false
	}
	sb.held += b
	return true
}

// free is what the store's byte bound still allows (no bound: -1).
func (sb *streamBuf) free() int64 {
	_, lim := sb.st.Limits()
	if lim <= 0 {
		return -1
	}
	_, n := sb.st.Size()
	return max(0, lim-n)
}

// track sets the share of a buffer already held (an SSE reader's, bounded
// per stream by its line limit) to b: counted, never refused.
func (sb *streamBuf) track(prev *int64, b int64) {
	if d := b - *prev; d != 0 {
		sb.st.Add(0, d)
		sb.held += d
		*prev = b
	}
}

func (sb *streamBuf) release() {
	sb.st.Add(0, -sb.held)
	sb.held = 0
}

// readAnswerShared is readAnswer within MaxAnswerBytes and what the
// store's byte bound still allows; the bytes read are held in buf.
func (s *Server) readAnswerShared(r io.Reader, buf *streamBuf) ([]byte, error) {
	limit := s.cfg.Hardening.MaxAnswerBytes
	if free := buf.free(); free >= 0 && (limit <= 0 || free < limit) {
		if free == 0 {
			s.m.limitRejects.WithLabelValues("stream_buffers").Inc()
			return nil, errAnswerTooLarge
		}
		limit = free
	}
	b, err := readAnswer(r, limit)
	buf.track(new(int64), int64(cap(b)))
	return b, err
}
