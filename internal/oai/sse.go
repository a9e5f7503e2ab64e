package oai

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"sync"
)

// Done is the payload of the final SSE event of an OpenAI stream.
var Done = []byte("[DONE]")

// WriteEvent writes one SSE event "data: <data>\n\n". The caller flushes.
func WriteEvent(w io.Writer, data []byte) error {
	buf := make([]byte, 0, len(data)+8)
	buf = append(buf, "data: "...)
	buf = append(buf, data...)
	buf = append(buf, '\n', '\n')
	_, err := w.Write(buf)
	return err
}

// Event is one server-sent event as read from a stream. Its slices belong
// to the SSEReader and are valid until the next call to Next.
type Event struct {
	// Raw is the event's bytes as received, including the terminating
	// blank line, so a proxy can forward it unchanged.
	Raw []byte
	// Data is the concatenation of its data: lines (joined by '\n').
	Data []byte
}

// IsDone reports whether the event is the "[DONE]" terminator.
func (e *Event) IsDone() bool { return bytes.Equal(bytes.TrimSpace(e.Data), Done) }

// ErrLineTooLong is returned for an SSE line, or an event, beyond the
// reader's limit.
var ErrLineTooLong = errors.New("oai: sse line too long")

// SSEReader reads server-sent events. It is not safe for concurrent use.
type SSEReader struct {
	r         *bufio.Reader
	max       int
	raw, data []byte // reused by Next
}

// readers pools the 4 KiB bufio readers: one per proxied stream was the
// frontend's largest allocation (BenchmarkStream, -memprofile).
var readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 4<<10) }}

// NewSSEReader reads events from r; lines, and events, longer than
// maxLine bytes (0 = 1 MiB) fail with ErrLineTooLong (an event of many
// short lines would otherwise grow without bound). Call Close when done to recycle
// its buffer.
func NewSSEReader(r io.Reader, maxLine int) *SSEReader {
	if maxLine <= 0 {
		maxLine = 1 << 20
	}
	br := readers.Get().(*bufio.Reader)
	br.Reset(r)
	return &SSEReader{r: br, max: maxLine}
}

// Close recycles the reader's buffer; the SSEReader must not be used after.
// It does not close the underlying reader.
func (s *SSEReader) Close() {
	if s.r != nil {
		s.r.Reset(nil)
		readers.Put(s.r)
		s.r = nil
	}
}

// Next returns the next event. It returns io.EOF at a clean end of stream
// (no partial event pending) and io.ErrUnexpectedEOF when the stream ends
// inside an event. Comment-only events (": keepalive") are returned with
// empty Data.
func (s *SSEReader) Next() (Event, error) {
	ev := Event{Raw: s.raw[:0], Data: s.data[:0]}
	hasData := false
	defer func() { s.raw, s.data = ev.Raw[:0], ev.Data[:0] }()
	for {
		line, err := s.readLine()
		if err != nil {
			if errors.Is(err, io.EOF) {
				if len(ev.Raw) == 0 && len(line) == 0 {
					return Event{}, io.EOF
				}
				if len(line) > 0 {
					ev.Raw = append(ev.Raw, line...)
					s.field(&ev, &hasData, line)
				}
				ev.Raw = append(ev.Raw, '\n')
				return ev, io.ErrUnexpectedEOF
			}
			return ev, err
		}
		if len(bytes.TrimRight(line, "\r\n")) == 0 {
			if len(ev.Raw) == 0 {
				continue // leading blank line: skip it
			}
			ev.Raw = append(ev.Raw, line...)
			return ev, nil
		}
		if len(ev.Raw)+len(line) > s.max {
			return Event{}, ErrLineTooLong
		}
		ev.Raw = append(ev.Raw, line...)
		s.field(&ev, &hasData, line)
	}
}

func (s *SSEReader) field(ev *Event, hasData *bool, line []byte) {
	line = bytes.TrimRight(line, "\r\n")
	if v, ok := bytes.CutPrefix(line, []byte("data:")); ok {
		v = bytes.TrimPrefix(v, []byte(" "))
		if *hasData {
			ev.Data = append(ev.Data, '\n')
		}
		*hasData = true
		ev.Data = append(ev.Data, v...)
	}
}

// Buffered is the number of bytes already read from the stream and not yet
// returned: a proxy flushes its client only when it is 0, so a burst of
// events costs one flush instead of one per event.
func (s *SSEReader) Buffered() int { return s.r.Buffered() }

// BufferBytes is what the reader holds now: its read buffer and the
// capacity of the event buffers it reuses (at most about twice its line
// limit), for a caller that accounts for the memory its streams hold.
func (s *SSEReader) BufferBytes() int {
	n := cap(s.raw) + cap(s.data)
	if s.r != nil {
		n += s.r.Size()
	}
	return n
}

// readLine returns the next line including its '\n' (without one at EOF).
// The slice is only valid until the next read.
func (s *SSEReader) readLine() ([]byte, error) {
	frag, err := s.r.ReadSlice('\n')
	if err != bufio.ErrBufferFull {
		if len(frag) > s.max {
			return nil, ErrLineTooLong
		}
		return frag, err
	}
	out := append([]byte(nil), frag...)
	for {
		frag, err = s.r.ReadSlice('\n')
		out = append(out, frag...)
		if len(out) > s.max {
			return nil, ErrLineTooLong
		}
		if err != bufio.ErrBufferFull {
			return out, err
		}
	}
}
