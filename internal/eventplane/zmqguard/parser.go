package zmqguard

import (
	"encoding/binary"
	"fmt"
	"time"
)

// Defaults of Limits.
const (
	// DefaultMaxMessageBytes bounds one message (the sum of its frames).
	// A vLLM/SGLang batch is the events of one engine step; a BlockStored
	// costs about 5.6 bytes per token in msgpack (a uint32 token id is 5
	// bytes, a 9-byte hash per 16-token block), so 16 MiB holds some three
	// million tokens stored in one step: a 1M-token prompt stored at once
	// (e.g. loaded by a KV connector) with room to spare.
	DefaultMaxMessageBytes = 16 << 20
	// DefaultMaxFrames bounds the frames of one message: a KV event
	// message has 3 ([topic, seq, payload]), a replay reply 3 or 4.
	DefaultMaxFrames = 64
	// MaxCommandBytes bounds a command frame (READY, SUBSCRIBE, PING):
	// metadata and topics, never payloads.
	MaxCommandBytes = 64 << 10
	// DefaultHandshakeTimeout bounds the greeting and READY exchange.
	DefaultHandshakeTimeout = 10 * time.Second
)

// Reasons a peer is dropped (DropError.Reason, the metric's label).
const (
	ReasonFrame     = "frame_too_large"
	ReasonMessage   = "message_too_large"
	ReasonFrames    = "too_many_frames"
	ReasonCommand   = "command_too_large"
	ReasonMalformed = "malformed"
	ReasonHandshake = "handshake_timeout"
)

// Reasons lists every Reason* value.
func Reasons() []string {
	return []string{ReasonFrame, ReasonMessage, ReasonFrames, ReasonCommand, ReasonMalformed, ReasonHandshake}
}

// Limits bound what one peer may send.
type Limits struct {
	// MaxMessageBytes bounds a message: each frame and the sum of the
	// frames of one message. Default DefaultMaxMessageBytes; zero means
	// the default.
	MaxMessageBytes int64
	// MaxFrames bounds the frames of one message. Default
	// DefaultMaxFrames; zero means the default.
	MaxFrames int
	// HandshakeTimeout bounds the time from connect until zmq4 has read
	// the peer's greeting and READY. Default DefaultHandshakeTimeout;
	// zero means the default.
	HandshakeTimeout time.Duration
}

func (l Limits) withDefaults() Limits {
	if l.MaxMessageBytes <= 0 {
		l.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if l.MaxFrames <= 0 {
		l.MaxFrames = DefaultMaxFrames
	}
	if l.HandshakeTimeout <= 0 {
		l.HandshakeTimeout = DefaultHandshakeTimeout
	}
	return l
}

// DropError is what a guarded connection's Read returns once it dropped
// its peer. It is a net.Error that is not a timeout, so zmq4 closes the
// connection and removes it from the socket.
type DropError struct {
	Reason string // one of the Reason* constants
	Detail string
}

func (e *DropError) Error() string {
	return fmt.Sprintf("zmqguard: peer dropped (%s): %s", e.Reason, e.Detail)
}

// Timeout is false: the peer is gone for good.
func (e *DropError) Timeout() bool { return false }

// Temporary is false (net.Error).
func (e *DropError) Temporary() bool { return false }

const (
	greetingLen = 64
	flagMore    = 0x1
	flagLong    = 0x2
	flagCommand = 0x4
	flagsKnown  = flagMore | flagLong | flagCommand
)

type state uint8

const (
	stGreeting state = iota
	stFlags
	stSize // 1 or 8 bytes
	stBody
)

// Parser follows a ZMTP 3 inbound stream (greeting, then frames) and
// refuses it at the first byte that breaks the limits. The zero value is
// not usable; use NewParser. Not safe for concurrent use.
type Parser struct {
	lim Limits

	st       state
	off      int64 // bytes fed so far
	need     int64 // bytes left in the current field
	flags    byte
	size     uint64 // current frame's size, as read so far
	msgBytes int64  // frames of the current message so far
	msgFrame int

	withhold     bool
	withholdFrom int64  // offset of the first withheld byte
	readyEnd     int64  // offset just past the first command frame; 0 = not yet
	err          error  // sticky
	cmd          []byte // the first command's body, checked when complete
}

// NewParser returns a parser at the start of a stream.
func NewParser(l Limits) *Parser {
	return &Parser{lim: l.withDefaults(), st: stGreeting, need: greetingLen}
}

// Held returns how many of the last bytes fed must not reach zmq4 yet: a
// long frame's size bytes after the first and its body until the body is
// complete (zmq4 allocates the body once it has the size).
func (p *Parser) Held() int64 {
	if !p.withhold {
		return 0
	}
	return p.off - p.withholdFrom
}

// HandshakeEnd is the stream offset just past the peer's first command
// (its READY), or 0 while it has not arrived.
func (p *Parser) HandshakeEnd() int64 { return p.readyEnd }

// Feed advances over b. Once it returns an error the stream is refused;
// feeding more returns the same error.
func (p *Parser) Feed(b []byte) error {
	if p.err == nil {
		p.err = p.feed(b)
	}
	return p.err
}

func (p *Parser) feed(b []byte) error {
	for len(b) > 0 {
		switch p.st {
		case stGreeting:
			// Signature 0xFF, 8 bytes padding, 0x7F; then the major version.
			pos := greetingLen - p.need
			c := b[0]
			switch {
			case pos == 0 && c != 0xFF, pos == 9 && c != 0x7F:
				return &DropError{Reason: ReasonMalformed, Detail: "not a ZMTP signature"}
			case pos == 10 && c < 3:
				return &DropError{Reason: ReasonMalformed, Detail: fmt.Sprintf("ZMTP version %d < 3", c)}
			}
			p.step(1)
			if p.need == 0 {
				p.st, p.need = stFlags, 1
			}
			b = b[1:]
		case stFlags:
			f := b[0]
			switch {
			case f&^flagsKnown != 0:
				return &DropError{Reason: ReasonMalformed, Detail: fmt.Sprintf("reserved flag bits %#x", f)}
			case f&flagCommand != 0 && (f&flagMore != 0 || p.msgFrame > 0):
				return &DropError{Reason: ReasonMalformed, Detail: "command inside a multipart message"}
			}
			p.step(1)
			p.flags, p.size, p.st, p.need = f, 0, stSize, 1
			if f&flagLong != 0 {
				p.need = 8
			}
			b = b[1:]
		case stSize:
			p.size = p.size<<8 | uint64(b[0])
			p.step(1)
			b = b[1:]
			if p.flags&flagLong != 0 && p.need == 7 {
				// zmq4 reads flags and the first size byte together: they
				// tell it nothing to allocate. The rest waits for the body.
				p.withhold, p.withholdFrom = true, p.off
			}
			if p.need > 0 {
				continue
			}
			if err := p.header(); err != nil {
				return err
			}
		case stBody:
			n := min(int64(len(b)), p.need)
			if p.flags&flagCommand != 0 && p.readyEnd == 0 {
				p.cmd = append(p.cmd, b[:n]...)
			}
			p.step(n)
			b = b[n:]
			if p.need == 0 {
				if err := p.frameDone(); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (p *Parser) step(n int64) {
	p.off += n
	p.need -= n
}

// header checks a complete frame header against the limits.
func (p *Parser) header() error {
	if p.flags&flagCommand != 0 {
		if p.size > MaxCommandBytes {
			return &DropError{Reason: ReasonCommand, Detail: fmt.Sprintf("command frame of %d bytes > %d", p.size, MaxCommandBytes)}
		}
	} else {
		max := uint64(p.lim.MaxMessageBytes)
		switch {
		case p.size > max:
			return &DropError{Reason: ReasonFrame, Detail: fmt.Sprintf("frame of %d bytes > %d", p.size, max)}
		case uint64(p.msgBytes)+p.size > max:
			return &DropError{Reason: ReasonMessage, Detail: fmt.Sprintf("message of %d+%d bytes > %d", p.msgBytes, p.size, max)}
		case p.msgFrame+1 > p.lim.MaxFrames:
			return &DropError{Reason: ReasonFrames, Detail: fmt.Sprintf("message of more than %d frames", p.lim.MaxFrames)}
		}
		p.msgBytes += int64(p.size)
		p.msgFrame++
	}
	p.st, p.need = stBody, int64(p.size)
	if p.need == 0 {
		return p.frameDone()
	}
	return nil
}

func (p *Parser) frameDone() error {
	p.withhold = false
	p.st, p.need = stFlags, 1
	if p.flags&flagCommand != 0 {
		if p.readyEnd == 0 {
			p.readyEnd = p.off
			err := checkCommand(p.cmd)
			p.cmd = nil
			return err
		}
	} else if p.flags&flagMore == 0 {
		p.msgBytes, p.msgFrame = 0, 0
	}
	return nil
}

// checkCommand checks the framing of the peer's first command: a name
// length within the body and, for READY, properties (name length byte,
// name, 4-byte value length, value) that end with the body. NB: zmq4
// slices READY's properties without checking their bounds (a truncated
// property panics its accept goroutine).
func checkCommand(b []byte) error {
	if len(b) == 0 || int(b[0]) > len(b)-1 {
		return &DropError{Reason: ReasonMalformed, Detail: "command name beyond its frame"}
	}
	name, md := string(b[1:1+b[0]]), b[1+b[0]:]
	if name != "READY" {
		return nil
	}
	for len(md) > 0 {
		klen := int(md[0])
		if 1+klen+4 > len(md) {
			return &DropError{Reason: ReasonMalformed, Detail: "READY property beyond its frame"}
		}
		vlen := binary.BigEndian.Uint32(md[1+klen:])
		md = md[1+klen+4:]
		if uint64(vlen) > uint64(len(md)) {
			return &DropError{Reason: ReasonMalformed, Detail: "READY property value beyond its frame"}
		}
		md = md[vlen:]
	}
	return nil
}
