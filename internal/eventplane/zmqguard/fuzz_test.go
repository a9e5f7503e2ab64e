package zmqguard

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/internal/eventplane/zmqguard/zmtptest"
)

// chunked is a net.Conn whose reads return the stream in pieces sized by
// cuts (cycled).
type chunked struct {
	net.Conn // nil: only Read, Close and RemoteAddr are used
	data     []byte
	cuts     []byte
	i        int
}

func (c *chunked) Read(b []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := len(b)
	if len(c.cuts) > 0 {
		n = min(n, int(c.cuts[c.i%len(c.cuts)])+1)
		c.i++
	}
	n = copy(b, c.data[:min(n, len(c.data))])
	c.data = c.data[n:]
	return n, nil
}

func (c *chunked) Close() error         { return nil }
func (c *chunked) RemoteAddr() net.Addr { return &net.TCPAddr{} }

// FuzzGuard: whatever the stream and however it is cut, reading through a
// guarded conn never panics, hands over a prefix of the stream, never a
// complete frame header over the limits, and never a long frame's size
// before its body.
func FuzzGuard(f *testing.F) {
	hello := zmtptest.Hello("PUB")
	seed := func(parts ...[]byte) []byte {
		b := append([]byte(nil), hello...)
		for _, p := range parts {
			b = append(b, p...)
		}
		return b
	}
	f.Add(seed(zmtptest.Message([]byte("kv@p@m"), make([]byte, 8), make([]byte, 300))), []byte{3, 0, 200}, []byte{8})
	f.Add(seed(zmtptest.Header(0, 1<<40)), []byte{1}, []byte{1, 6})
	f.Add(seed(zmtptest.Header(0, 1<<48+1)), []byte{}, []byte{})
	f.Add(seed(zmtptest.Message(make([]byte, 200), make([]byte, 200))), []byte{255}, []byte{0})
	f.Add(seed(zmtptest.Command("SUBSCRIBE", nil), zmtptest.Header(0x4, 70000)), []byte{10}, []byte{2})
	f.Add([]byte("GET / HTTP/1.1\r\n\r\n"), []byte{}, []byte{})
	const max = 512
	lim := Limits{MaxMessageBytes: max, MaxFrames: 4, HandshakeTimeout: time.Hour}
	f.Fuzz(func(t *testing.T, stream, netCuts, readCuts []byte) {
		var drops int
		c := newConn(&chunked{data: stream, cuts: netCuts}, &Guard{Limits: lim,
			OnDrop: func(string, net.Addr, error) { drops++ }})
		defer c.Close()
		var got []byte
		buf := make([]byte, 1024)
		for i := 0; ; i++ {
			n := len(buf)
			if len(readCuts) > 0 {
				n = int(readCuts[i%len(readCuts)]) + 1
			}
			k, err := c.Read(buf[:n])
			got = append(got, buf[:k]...)
			if err != nil {
				var de *DropError
				if errors.As(err, &de) != (drops == 1) {
					t.Fatalf("err %v with %d drops", err, drops)
				}
				break
			}
			if k == 0 {
				t.Fatal("Read returned 0, nil")
			}
		}
		if len(got) > len(stream) || string(got) != string(stream[:len(got)]) {
			t.Fatalf("handed over %d bytes that are not a prefix of the stream", len(got))
		}
		checkHandedOver(t, got, lim)
	})
}

// checkHandedOver parses what zmq4 was given, independently of Parser.
func checkHandedOver(t *testing.T, b []byte, lim Limits) {
	if len(b) < 64 {
		return
	}
	b = b[64:]
	var msgBytes uint64
	var frames int
	for len(b) >= 2 {
		flags := b[0]
		size, hdr := uint64(b[1]), 2
		if flags&0x2 != 0 {
			if len(b) < 9 {
				if len(b) > 2 {
					t.Fatalf("part of a long frame's size handed over before its body")
				}
				return
			}
			size, hdr = binary.BigEndian.Uint64(b[1:9]), 9
		}
		if flags&0x4 != 0 {
			if size > MaxCommandBytes {
				t.Fatalf("command of %d bytes handed over", size)
			}
		} else {
			msgBytes += size
			frames++
			if size > uint64(lim.MaxMessageBytes) || msgBytes > uint64(lim.MaxMessageBytes) || frames > lim.MaxFrames {
				t.Fatalf("frame of %d bytes (message %d bytes, %d frames) handed over", size, msgBytes, frames)
			}
		}
		rest := uint64(len(b) - hdr)
		if rest < size {
			if hdr == 9 {
				t.Fatalf("long frame handed over before its body: %d of %d bytes", rest, size)
			}
			return
		}
		if flags&0x4 == 0 && flags&0x1 == 0 {
			msgBytes, frames = 0, 0
		}
		b = b[uint64(hdr)+size:]
	}
}
