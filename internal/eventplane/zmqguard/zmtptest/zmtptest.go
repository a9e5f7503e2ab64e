package zmtptest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"
)

// Greeting is a ZMTP 3.0 greeting with the NULL mechanism, as a client.
func Greeting() []byte {
	g := make([]byte, 64)
	g[0], g[9], g[10], g[11] = 0xFF, 0x7F, 3, 0
	copy(g[12:32], "NULL")
	return g
}

// Header is a frame header: flags (1 more, 4 command; the long bit is set
// from size) and size.
func Header(flags byte, size uint64) []byte {
	if size > 255 {
		h := make([]byte, 9)
		h[0] = flags | 0x2
		binary.BigEndian.PutUint64(h[1:], size)
		return h
	}
	return []byte{flags, byte(size)}
}

// Command is a command frame.
func Command(name string, body []byte) []byte {
	b := append([]byte{byte(len(name))}, name...)
	b = append(b, body...)
	return append(Header(0x4, uint64(len(b))), b...)
}

// Property is one metadata property of a READY command.
func Property(name, value string) []byte {
	b := append([]byte{byte(len(name))}, name...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(value)))
	return append(b, value...)
}

// Hello is the greeting and READY of a peer of socket type sockType
// (e.g. "PUB"): what a peer sends before its first message.
func Hello(sockType string) []byte {
	return append(Greeting(), Command("READY", Property("Socket-Type", sockType))...)
}

// Message is a message of the given frames.
func Message(frames ...[]byte) []byte {
	var b []byte
	for i, f := range frames {
		var more byte
		if i < len(frames)-1 {
			more = 0x1
		}
		b = append(b, Header(more, uint64(len(f)))...)
		b = append(b, f...)
	}
	return b
}

// ReadHandshake reads the other side's greeting, its READY and then msgs
// whole messages (e.g. a SUB's subscription, sent once it accepted the
// peer), discarding them.
func ReadHandshake(r io.Reader, msgs int) error {
	if _, err := io.ReadFull(r, make([]byte, 64)); err != nil {
		return fmt.Errorf("greeting: %w", err)
	}
	for cmd := true; cmd || msgs > 0; {
		var h [9]byte
		if _, err := io.ReadFull(r, h[:2]); err != nil {
			return err
		}
		size := uint64(h[1])
		if h[0]&0x2 != 0 {
			if _, err := io.ReadFull(r, h[2:]); err != nil {
				return err
			}
			size = binary.BigEndian.Uint64(h[1:])
		}
		if size > 1<<20 {
			return fmt.Errorf("frame of %d bytes", size)
		}
		if _, err := io.ReadFull(r, make([]byte, size)); err != nil {
			return err
		}
		switch {
		case cmd:
			cmd = false
		case h[0]&0x1 == 0:
			msgs--
		}
	}
	return nil
}

// Attack connects to addr and sends hello; when then is not nil, it
// waits for the socket's handshake and first message (a SUB's
// subscription: zmq4 accepted the peer) and sends then. It returns nil
// once the socket closed the connection (EOF or reset), an error if it
// did not within timeout.
func Attack(addr string, hello, then []byte, timeout time.Duration) error {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(timeout))
	if _, err := c.Write(hello); err != nil {
		return err
	}
	if then != nil {
		if err := ReadHandshake(c, 1); err != nil {
			return fmt.Errorf("handshake: %w", err)
		}
		if _, err := c.Write(then); err != nil {
			return err
		}
	}
	if _, err := io.Copy(io.Discard, c); err != nil && !errors.Is(err, syscall.ECONNRESET) {
		return fmt.Errorf("the socket did not close the peer: %w", err)
	}
	return nil
}
