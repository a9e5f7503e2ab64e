// Package zmqguard puts size and handshake bounds on every ZMTP 3 stream
// that go-zeromq/zmq4 reads from the network, before zmq4 allocates
// anything for it.
//
// zmq4 (v0.17) allocates each frame's body at the size its header
// declares: one long-frame header claiming 2^40 bytes is a fatal out of
// memory, above 2^48 a makeslice panic in a goroutine with no recover, and
// it offers no option to refuse either. A zmq4 socket picks its transport
// by the endpoint's scheme (zmq4.RegisterTransport), so this package
// registers the scheme "guarded-tcp": Endpoint rewrites tcp://host:port to
// it, and the transport's connections (dialed and accepted) parse the
// inbound stream as it is read: the 64-byte greeting, then frames (a flags
// byte: bit 0 more, bit 1 long size (8 bytes big-endian, else 1 byte), bit
// 2 command; then the body). A frame or message over the limits, a command
// over MaxCommandBytes, reserved flag bits or a bad greeting make Read
// return a *DropError and close the connection: zmq4 drops the peer (a
// dialed socket with reconnect redials) and Guard.OnDrop counts it.
//
// Contract: zmq4 never receives the complete size of a frame over the
// limits. The body of a long frame (size > 255) is withheld, with the
// last 7 bytes of its size, until the whole body has arrived, so a peer
// cannot make zmq4 allocate what it has not sent; a connection holds at
// most one such frame (at most MaxMessageBytes plus one read buffer).
// A peer that has not completed the handshake within HandshakeTimeout (a
// silent peer would otherwise stall zmq4's accept loop, and a handshake
// zmq4 refuses leaves its connection open) is dropped.
//
// The limits of a socket travel in the context it is created with
// (WithGuard); a socket created without one gets the defaults and no
// counting.
//
// Trust: the bounds keep a peer from exhausting memory; they do not
// authenticate it. ZMQ has no authentication here: any publisher that
// reaches a bound port can add or clear any pod's blocks, so the port must
// be reachable by the engines only (DESIGN.md §12).
//
// Safe for concurrent use: a Guard is read-only once sockets use it
// (OnDrop may be called from any connection's goroutine).
package zmqguard
