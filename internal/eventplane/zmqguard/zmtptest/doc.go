// Package zmtptest writes and reads raw ZMTP 3.0 bytes (NULL mechanism)
// for tests that play a hostile or minimal peer over a plain TCP socket.
// Its functions are pure and safe for concurrent use.
package zmtptest
