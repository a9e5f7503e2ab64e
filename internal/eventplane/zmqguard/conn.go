package zmqguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/go-zeromq/zmq4/transport"
)

// Scheme is the zmq4 transport of guarded TCP endpoints.
const Scheme = "guarded-tcp"

func init() {
	if err := zmq4.RegisterTransport(Scheme, guarded{tcp: transport.New("tcp")}); err != nil {
		panic(err) // registered twice: a programmer bug
	}
}

// Guard is the limits of a socket's peers and where drops are reported.
type Guard struct {
	Limits Limits
	// OnDrop, when set, is called once per dropped peer with the reason
	// (a Reason* constant), from that connection's goroutine or a timer.
	OnDrop func(reason string, remote net.Addr, err error)
}

type guardKey struct{}

// WithGuard returns ctx carrying g: a zmq4 socket created with it (and
// using an Endpoint) applies g to its connections.
func WithGuard(ctx context.Context, g *Guard) context.Context {
	return context.WithValue(ctx, guardKey{}, g)
}

func guardOf(ctx context.Context) *Guard {
	if g, ok := ctx.Value(guardKey{}).(*Guard); ok && g != nil {
		return g
	}
	return &Guard{}
}

// Endpoint rewrites a tcp:// endpoint to the guarded transport; others
// (ipc, inproc: local) are returned as they are.
func Endpoint(ep string) string {
	if rest, ok := strings.CutPrefix(ep, "tcp://"); ok {
		return Scheme + "://" + rest
	}
	return ep
}

// guarded is the zmq4 transport: TCP with every connection wrapped.
type guarded struct{ tcp transport.Transport }

func (t guarded) Dial(ctx context.Context, d transport.Dialer, addr string) (net.Conn, error) {
	c, err := t.tcp.Dial(ctx, d, addr)
	if err != nil {
		return nil, err
	}
	return newConn(c, guardOf(ctx)), nil
}

func (t guarded) Listen(ctx context.Context, addr string) (net.Listener, error) {
	ln, err := t.tcp.Listen(ctx, addr)
	if err != nil {
		return nil, err
	}
	return listener{Listener: ln, g: guardOf(ctx)}, nil
}

func (t guarded) Addr(ep string) (string, error) { return t.tcp.Addr(ep) }

type listener struct {
	net.Listener
	g *Guard
}

func (l listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return newConn(c, l.g), nil
}

// readChunk is what one Read asks the network for.
const readChunk = 32 << 10

// conn hands zmq4 only the bytes its Parser has cleared. Read is called
// by one goroutine at a time (zmq4's handshake, then its reader); the
// handshake timer and Close may run concurrently with it.
type conn struct {
	net.Conn
	g *Guard
	p *Parser

	buf      []byte // read, not yet handed to zmq4; buf[r:] is pending
	r        int
	chunk    []byte
	released int64 // bytes handed to zmq4
	rerr     error // the network's error, returned once buf is drained

	established atomic.Bool
	dropped     atomic.Pointer[DropError]
	once        sync.Once
	timer       *time.Timer
}

func newConn(c net.Conn, g *Guard) *conn {
	gc := &conn{Conn: c, g: g, p: NewParser(g.Limits)}
	gc.timer = time.AfterFunc(gc.p.lim.HandshakeTimeout, func() {
		if !gc.established.Load() {
			gc.drop(&DropError{Reason: ReasonHandshake,
				Detail: fmt.Sprintf("no complete handshake within %s", gc.p.lim.HandshakeTimeout)})
		}
	})
	return gc
}

// drop closes the connection and reports it, once.
func (c *conn) drop(e *DropError) {
	c.once.Do(func() {
		c.dropped.Store(e)
		_ = c.Conn.Close()
		if c.g.OnDrop != nil {
			c.g.OnDrop(e.Reason, c.Conn.RemoteAddr(), e)
		}
	})
}

func (c *conn) Read(b []byte) (int, error) {
	if e := c.dropped.Load(); e != nil {
		return 0, e
	}
	if end := c.p.HandshakeEnd(); end > 0 && c.released >= end && !c.established.Load() {
		// zmq4 reads again after the peer's READY: its handshake is done.
		c.established.Store(true)
		c.timer.Stop()
	}
	for int64(len(c.buf)-c.r)-c.p.Held() <= 0 {
		if c.rerr != nil {
			return 0, c.rerr
		}
		if c.chunk == nil {
			c.chunk = make([]byte, readChunk)
		}
		n, err := c.Conn.Read(c.chunk)
		if e := c.dropped.Load(); e != nil {
			return 0, e // closed by the handshake timer
		}
		if n > 0 {
			if ferr := c.p.Feed(c.chunk[:n]); ferr != nil {
				var de *DropError
				if !errors.As(ferr, &de) {
					de = &DropError{Reason: ReasonMalformed, Detail: ferr.Error()}
				}
				c.drop(de)
				c.timer.Stop()
				return 0, de
			}
			if c.r > 0 && c.r >= len(c.buf)/2 {
				// Keep only the pending bytes: a withheld tail may never
				// let r reach the end.
				c.buf = c.buf[:copy(c.buf, c.buf[c.r:])]
				c.r = 0
			}
			c.buf = append(c.buf, c.chunk[:n]...)
		}
		if err != nil {
			c.rerr = err
		}
	}
	free := len(c.buf) - int(c.p.Held())
	n := copy(b, c.buf[c.r:free])
	c.r += n
	c.released += int64(n)
	if c.r == len(c.buf) {
		c.r = 0
		if cap(c.buf) > 4*readChunk {
			c.buf = nil // a withheld frame's buffer: do not pin it
		} else {
			c.buf = c.buf[:0]
		}
	}
	return n, nil
}

func (c *conn) Close() error {
	c.timer.Stop()
	return c.Conn.Close()
}
