package trace

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"time"
)

// TraceBlockTokens is the block size of Mooncake hash ids, in tokens.
const TraceBlockTokens = 512

// Record is one trace request.
type Record struct {
	// Timestamp is the arrival time from the start of the trace (the JSON
	// value is in milliseconds).
	Timestamp    time.Duration
	InputLength  int
	OutputLength int
	HashIDs      []uint64
}

// NumBlocks is the number of trace blocks input_length spans:
// ceil(InputLength / TraceBlockTokens).
func (r *Record) NumBlocks() int { return (r.InputLength + TraceBlockTokens - 1) / TraceBlockTokens }

// ErrSyntax is wrapped by every error about a bad line; the message names
// the line number.
var ErrSyntax = errors.New("trace: bad record")

// maxLine bounds one JSON line (a 128k-token prompt has 250 ids, ~2 KiB;
// this leaves room for much longer traces).
const maxLine = 64 << 20

// Reader reads records one at a time.
type Reader struct {
	sc   *bufio.Scanner
	gz   *gzip.Reader
	line int
}

// NewReader returns a reader of r, which holds JSON Lines, plain or gzip
// compressed (detected by the magic bytes 1f 8b).
func NewReader(r io.Reader) (*Reader, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	rd := &Reader{}
	magic, err := br.Peek(2)
	var src io.Reader = br
	if err == nil && magic[0] == 0x1f && magic[1] == 0x8b {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("trace: open gzip: %w", err)
		}
		rd.gz = gz
		src = gz
	}
	rd.sc = bufio.NewScanner(src)
	rd.sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	return rd, nil
}

// Line is the number of the last line read (1-based).
func (r *Reader) Line() int { return r.line }

// rawRecord is the wire form; pointers detect missing fields.
type rawRecord struct {
	Timestamp    *json.Number `json:"timestamp"`
	InputLength  *json.Number `json:"input_length"`
	OutputLength *json.Number `json:"output_length"`
	HashIDs      *[]int64     `json:"hash_ids"`
}

// Read returns the next record, or io.EOF after the last. Blank lines are
// skipped. A bad line yields an error wrapping ErrSyntax and naming the line;
// reading may continue after it.
func (r *Reader) Read() (Record, error) {
	for r.sc.Scan() {
		r.line++
		b := bytes.TrimSpace(r.sc.Bytes())
		if len(b) == 0 {
			continue
		}
		rec, err := parse(b)
		if err != nil {
			return Record{}, fmt.Errorf("%w: line %d: %w", ErrSyntax, r.line, err)
		}
		return rec, nil
	}
	if err := r.sc.Err(); err != nil {
		return Record{}, fmt.Errorf("trace: read after line %d: %w", r.line, err)
	}
	return Record{}, io.EOF
}

func parse(b []byte) (Record, error) {
	var raw rawRecord
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		return Record{}, err
	}
	if dec.More() {
		return Record{}, errors.New("trailing data after the JSON object")
	}
	var errs []error
	var rec Record
	if raw.Timestamp == nil {
		errs = append(errs, errors.New("missing timestamp"))
	} else if ms, err := raw.Timestamp.Float64(); err != nil || ms < 0 || math.IsInf(ms, 0) || ms > float64(math.MaxInt64/int64(time.Millisecond)) {
		errs = append(errs, fmt.Errorf("timestamp %s must be a non-negative number of milliseconds", raw.Timestamp))
	} else {
		rec.Timestamp = time.Duration(math.Round(ms * float64(time.Millisecond)))
	}
	rec.InputLength = count(raw.InputLength, "input_length", &errs)
	rec.OutputLength = count(raw.OutputLength, "output_length", &errs)
	if raw.HashIDs == nil {
		errs = append(errs, errors.New("missing hash_ids"))
	} else {
		rec.HashIDs = make([]uint64, len(*raw.HashIDs))
		for i, h := range *raw.HashIDs {
			if h < 0 {
				errs = append(errs, fmt.Errorf("hash_ids[%d] = %d is negative", i, h))
				break
			}
			rec.HashIDs[i] = uint64(h)
		}
	}
	return rec, errors.Join(errs...)
}

func count(n *json.Number, name string, errs *[]error) int {
	if n == nil {
		*errs = append(*errs, fmt.Errorf("missing %s", name))
		return 0
	}
	v, err := n.Int64()
	if err != nil || v < 0 || v > math.MaxInt32 {
		*errs = append(*errs, fmt.Errorf("%s %s must be a non-negative integer", name, n))
		return 0
	}
	return int(v)
}

// ReadAll reads every record of r (plain or gzip JSON Lines), stopping at
// the first bad line.
func ReadAll(r io.Reader) ([]Record, error) {
	rd, err := NewReader(r)
	if err != nil {
		return nil, err
	}
	var recs []Record
	for {
		rec, err := rd.Read()
		if err == io.EOF {
			return recs, nil
		}
		if err != nil {
			return nil, err
		}
		recs = append(recs, rec)
	}
}

// ReadFile reads every record of the file at path (plain or gzip).
func ReadFile(path string) ([]Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	defer f.Close()
	recs, err := ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("trace: %s: %w", path, err)
	}
	return recs, nil
}

// Write writes recs as JSON Lines (timestamps in whole milliseconds,
// rounded), the format Reader reads.
func Write(w io.Writer, recs []Record) error {
	bw := bufio.NewWriter(w)
	var buf []byte
	for _, r := range recs {
		buf = buf[:0]
		buf = fmt.Appendf(buf, `{"timestamp": %d, "input_length": %d, "output_length": %d, "hash_ids": [`,
			(r.Timestamp+time.Millisecond/2)/time.Millisecond, r.InputLength, r.OutputLength)
		for i, h := range r.HashIDs {
			if i > 0 {
				buf = append(buf, ", "...)
			}
			buf = fmt.Appendf(buf, "%d", h)
		}
		buf = append(buf, "]}\n"...)
		if _, err := bw.Write(buf); err != nil {
			return fmt.Errorf("trace: write: %w", err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("trace: write: %w", err)
	}
	return nil
}
