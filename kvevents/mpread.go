package kvevents

import (
	"encoding/binary"
	"fmt"
	"math"
)

// mpReader is a minimal, allocation-free msgpack reader over a byte slice,
// used by the hot decoders (DecodeMsgpack, VLLMDecoder). Every read checks
// bounds and returns an error wrapping ErrMalformed; nothing panics on bad
// input. Length prefixes are checked against the bytes left (each element
// takes at least one byte) before anyone allocates from them, so a hostile
// length cannot trigger a huge allocation.
//
// NB: vmihailenco/msgpack's Decoder works through an io.Reader and costs
// roughly 10-20 ns per token read; this reader is a few ns (see
// BenchmarkVLLMDecode), which matters because token ids dominate vLLM
// payloads.
type mpReader struct {
	b   []byte
	off int
}

// maxDepth bounds nesting when skipping unknown values.
const maxDepth = 256

func (r *mpReader) errf(format string, args ...any) error {
	return fmt.Errorf("%w: msgpack at byte %d: %s", ErrMalformed, r.off, fmt.Sprintf(format, args...))
}

func (r *mpReader) eof() bool { return r.off >= len(r.b) }

func (r *mpReader) peek() (byte, error) {
	if r.off >= len(r.b) {
		return 0, r.errf("unexpected end of input")
	}
	return r.b[r.off], nil
}

// need makes sure n more bytes are available.
func (r *mpReader) need(n int) error {
	if n < 0 || len(r.b)-r.off < n {
		return r.errf("unexpected end of input (need %d bytes)", n)
	}
	return nil
}

func (r *mpReader) u8() (uint64, error) {
	if err := r.need(1); err != nil {
		return 0, err
	}
	v := r.b[r.off]
	r.off++
	return uint64(v), nil
}

func (r *mpReader) u16() (uint64, error) {
	if err := r.need(2); err != nil {
		return 0, err
	}
	v := binary.BigEndian.Uint16(r.b[r.off:])
	r.off += 2
	return uint64(v), nil
}

func (r *mpReader) u32() (uint64, error) {
	if err := r.need(4); err != nil {
		return 0, err
	}
	v := binary.BigEndian.Uint32(r.b[r.off:])
	r.off += 4
	return uint64(v), nil
}

func (r *mpReader) u64() (uint64, error) {
	if err := r.need(8); err != nil {
		return 0, err
	}
	v := binary.BigEndian.Uint64(r.b[r.off:])
	r.off += 8
	return v, nil
}

// isNil consumes a nil if one is next.
func (r *mpReader) isNil() bool {
	if r.off < len(r.b) && r.b[r.off] == 0xc0 {
		r.off++
		return true
	}
	return false
}

// arrayLen reads an array header. ok is false (and nothing is consumed) when
// the next value is not an array.
func (r *mpReader) arrayLen() (n int, ok bool, err error) {
	return r.containerLen(0x90, 0xdc, 0xdd, 1, "array of %d elements")
}

// mapLen reads a map header; ok is false when the next value is not a map.
func (r *mpReader) mapLen() (n int, ok bool, err error) {
	return r.containerLen(0x80, 0xde, 0xdf, 2, "map of %d entries")
}

// containerLen reads an array or map header whose fix form starts at fix
// (16 entries) and whose 16- and 32-bit forms are c16 and c32. A length
// that cannot fit in the bytes left (each entry needs at least perEntry
// bytes) is an error, so callers may allocate by it.
func (r *mpReader) containerLen(fix, c16, c32 byte, perEntry int, what string) (n int, ok bool, err error) {
	c, err := r.peek()
	if err != nil {
		return 0, false, err
	}
	var v uint64
	switch {
	case c >= fix && c <= fix+0x0f:
		r.off++
		v = uint64(c & 0x0f)
	case c == c16:
		r.off++
		v, err = r.u16()
	case c == c32:
		r.off++
		v, err = r.u32()
	default:
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	if v > uint64(len(r.b)-r.off)/uint64(perEntry) {
		return 0, false, r.errf(what+" exceeds the %d bytes left", v, len(r.b)-r.off)
	}
	return int(v), true, nil
}

// str reads a string and returns its bytes (aliasing the input); ok is false
// when the next value is not a string.
func (r *mpReader) str() (s []byte, ok bool, err error) {
	c, err := r.peek()
	if err != nil {
		return nil, false, err
	}
	var n uint64
	switch {
	case c >= 0xa0 && c <= 0xbf:
		r.off++
		n = uint64(c & 0x1f)
	case c == 0xd9:
		r.off++
		n, err = r.u8()
	case c == 0xda:
		r.off++
		n, err = r.u16()
	case c == 0xdb:
		r.off++
		n, err = r.u32()
	default:
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return r.raw(n)
}

// bin reads a bin value; ok is false when the next value is not bin.
func (r *mpReader) bin() (s []byte, ok bool, err error) {
	c, err := r.peek()
	if err != nil {
		return nil, false, err
	}
	var n uint64
	switch c {
	case 0xc4:
		r.off++
		n, err = r.u8()
	case 0xc5:
		r.off++
		n, err = r.u16()
	case 0xc6:
		r.off++
		n, err = r.u32()
	default:
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return r.raw(n)
}

func (r *mpReader) raw(n uint64) ([]byte, bool, error) {
	if n > uint64(len(r.b)-r.off) {
		return nil, false, r.errf("length %d exceeds the %d bytes left", n, len(r.b)-r.off)
	}
	s := r.b[r.off : r.off+int(n)]
	r.off += int(n)
	return s, true, nil
}

// intKind classifies an integer read by integer.
type intKind uint8

const (
	notInt   intKind = iota
	unsigned         // v holds the value
	signed           // v holds the two's-complement bits of a negative int64
)

// integer reads any msgpack integer. For a negative value kind is signed and
// v carries its int64 bits. kind is notInt (nothing consumed) when the next
// value is not an integer.
func (r *mpReader) integer() (v uint64, kind intKind, err error) {
	c, err := r.peek()
	if err != nil {
		return 0, notInt, err
	}
	switch {
	case c <= 0x7f:
		r.off++
		return uint64(c), unsigned, nil
	case c >= 0xe0:
		r.off++
		return uint64(int64(int8(c))), signed, nil
	}
	switch c {
	case 0xcc:
		r.off++
		v, err = r.u8()
		return v, unsigned, err
	case 0xcd:
		r.off++
		v, err = r.u16()
		return v, unsigned, err
	case 0xce:
		r.off++
		v, err = r.u32()
		return v, unsigned, err
	case 0xcf:
		r.off++
		v, err = r.u64()
		return v, unsigned, err
	case 0xd0:
		r.off++
		v, err = r.u8()
		return sext(int64(int8(v))), kindOf(int64(int8(v))), err
	case 0xd1:
		r.off++
		v, err = r.u16()
		return sext(int64(int16(v))), kindOf(int64(int16(v))), err
	case 0xd2:
		r.off++
		v, err = r.u32()
		return sext(int64(int32(v))), kindOf(int64(int32(v))), err
	case 0xd3:
		r.off++
		v, err = r.u64()
		return v, kindOf(int64(v)), err
	}
	return 0, notInt, nil
}

func sext(v int64) uint64 { return uint64(v) }

func kindOf(v int64) intKind {
	if v < 0 {
		return signed
	}
	return unsigned
}

// uint reads a non-negative integer no larger than max.
func (r *mpReader) uint(what string, max uint64) (uint64, error) {
	v, k, err := r.integer()
	if err != nil {
		return 0, err
	}
	switch k {
	case notInt:
		return 0, r.errf("%s: want an unsigned integer, got %s", what, r.kindName())
	case signed:
		return 0, r.errf("%s: negative value %d", what, int64(v))
	}
	if v > max {
		return 0, r.errf("%s: %d out of range (max %d)", what, v, max)
	}
	return v, nil
}

// number consumes an int or float (its value is not needed).
func (r *mpReader) number(what string) error {
	c, err := r.peek()
	if err != nil {
		return err
	}
	switch c {
	case 0xca:
		r.off++
		_, err = r.u32()
		return err
	case 0xcb:
		r.off++
		_, err = r.u64()
		return err
	}
	if _, k, err := r.integer(); err != nil || k != notInt {
		return err
	}
	return r.errf("%s: want a number, got %s", what, r.kindName())
}

// float64 reads a float or integer as float64.
func (r *mpReader) float64() (float64, bool, error) {
	c, err := r.peek()
	if err != nil {
		return 0, false, err
	}
	switch c {
	case 0xca:
		r.off++
		v, err := r.u32()
		return float64(math.Float32frombits(uint32(v))), true, err
	case 0xcb:
		r.off++
		v, err := r.u64()
		return math.Float64frombits(v), true, err
	}
	v, k, err := r.integer()
	switch k {
	case unsigned:
		return float64(v), true, err
	case signed:
		return float64(int64(v)), true, err
	}
	return 0, false, err
}

// kindName names the type of the next value, for error messages.
func (r *mpReader) kindName() string {
	if r.off >= len(r.b) {
		return "end of input"
	}
	c := r.b[r.off]
	switch {
	case c <= 0x7f || c >= 0xe0 || (c >= 0xcc && c <= 0xd3):
		return "integer"
	case c >= 0x80 && c <= 0x8f || c == 0xde || c == 0xdf:
		return "map"
	case c >= 0x90 && c <= 0x9f || c == 0xdc || c == 0xdd:
		return "array"
	case c >= 0xa0 && c <= 0xbf || c >= 0xd9 && c <= 0xdb:
		return "string"
	case c == 0xc0:
		return "nil"
	case c == 0xc2 || c == 0xc3:
		return "bool"
	case c == 0xca || c == 0xcb:
		return "float"
	case c >= 0xc4 && c <= 0xc6:
		return "bin"
	case c == 0xc1:
		return "invalid byte 0xc1"
	}
	return "ext"
}

// skip consumes one value of any type.
func (r *mpReader) skip() error { return r.skipDepth(0) }

func (r *mpReader) skipDepth(depth int) error {
	if depth > maxDepth {
		return r.errf("nesting deeper than %d", maxDepth)
	}
	c, err := r.peek()
	if err != nil {
		return err
	}
	switch {
	case c <= 0x7f || c >= 0xe0 || c == 0xc0 || c == 0xc2 || c == 0xc3:
		r.off++
		return nil
	case c >= 0xcc && c <= 0xd3:
		_, _, err := r.integer()
		return err
	case c == 0xca || c == 0xcb:
		return r.number("value")
	case c >= 0xa0 && c <= 0xbf || c >= 0xd9 && c <= 0xdb:
		_, _, err := r.str()
		return err
	case c >= 0xc4 && c <= 0xc6:
		_, _, err := r.bin()
		return err
	case c >= 0x90 && c <= 0x9f || c == 0xdc || c == 0xdd:
		n, _, err := r.arrayLen()
		if err != nil {
			return err
		}
		for i := 0; i < n; i++ {
			// Fast path for the scalars that fill token and hash lists.
			if r.off < len(r.b) {
				switch c := r.b[r.off]; {
				case c <= 0x7f || c >= 0xe0 || c == 0xc0:
					r.off++
					continue
				case c == 0xcd && r.off+3 <= len(r.b):
					r.off += 3
					continue
				case c == 0xce && r.off+5 <= len(r.b):
					r.off += 5
					continue
				case c == 0xcf && r.off+9 <= len(r.b):
					r.off += 9
					continue
				}
			}
			if err := r.skipDepth(depth + 1); err != nil {
				return err
			}
		}
		return nil
	case c >= 0x80 && c <= 0x8f || c == 0xde || c == 0xdf:
		n, _, err := r.mapLen()
		if err != nil {
			return err
		}
		for i := 0; i < 2*n; i++ {
			if err := r.skipDepth(depth + 1); err != nil {
				return err
			}
		}
		return nil
	case c >= 0xd4 && c <= 0xd8: // fixext 1,2,4,8,16
		r.off++
		return r.skipN(1 + (1 << (c - 0xd4)))
	case c >= 0xc7 && c <= 0xc9: // ext 8,16,32
		r.off++
		var n uint64
		switch c {
		case 0xc7:
			n, err = r.u8()
		case 0xc8:
			n, err = r.u16()
		default:
			n, err = r.u32()
		}
		if err != nil {
			return err
		}
		if n > uint64(len(r.b)) {
			return r.errf("ext length %d exceeds input", n)
		}
		return r.skipN(int(n) + 1)
	}
	return r.errf("invalid type byte 0x%02x", c)
}

func (r *mpReader) skipN(n int) error {
	if err := r.need(n); err != nil {
		return err
	}
	r.off += n
	return nil
}

// value returns the raw bytes of the next value and consumes it.
func (r *mpReader) value() ([]byte, error) {
	start := r.off
	if err := r.skip(); err != nil {
		return nil, err
	}
	return r.b[start:r.off], nil
}
