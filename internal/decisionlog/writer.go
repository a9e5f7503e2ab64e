package decisionlog

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/kvrouter/kvrouter/router"
)

// Defaults of the writer's bounds.
const (
	DefaultSample   = 1
	DefaultMaxBytes = 64 << 20
	DefaultRate     = 100
)

// Config bounds a Writer. Zero fields take the defaults.
type Config struct {
	// Sample keeps one decision in Sample (1: all).
	Sample int
	// MaxBytes caps the bytes written; past it the writer stops.
	MaxBytes int64
	// Rate caps the records written per second.
	Rate int
}

func (c Config) withDefaults() Config {
	if c.Sample <= 0 {
		c.Sample = DefaultSample
	}
	if c.MaxBytes <= 0 {
		c.MaxBytes = DefaultMaxBytes
	}
	if c.Rate <= 0 {
		c.Rate = DefaultRate
	}
	return c
}

// Writer appends sampled decisions to a log within its bounds. Safe for
// concurrent use; a nil *Writer logs nothing.
type Writer struct {
	mu      sync.Mutex
	w       io.Writer
	c       io.Closer
	cfg     Config
	now     func() time.Time
	seen    uint64
	bytes   int64
	sec     int64
	inSec   int
	written uint64
	dropped uint64
	err     error
}

// New returns a writer to w; now is the clock of the rate cap.
func New(w io.Writer, cfg Config, now func() time.Time) *Writer {
	return &Writer{w: w, cfg: cfg.withDefaults(), now: now}
}

// Open opens (appending) or creates the log at path.
func Open(path string, cfg Config) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("decisionlog: open: %w", err)
	}
	lw := New(f, cfg, time.Now)
	lw.c = f
	if st, err := f.Stat(); err == nil {
		lw.bytes = st.Size() // the cap counts what an earlier run wrote
	}
	return lw, nil
}

// Log records d with its outcome if the sample, rate and size caps let it.
// It reports whether the record was written.
func (l *Writer) Log(d *router.Decision, outcome string) bool {
	if l == nil || d == nil || d.Queued {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen++
	if (l.seen-1)%uint64(l.cfg.Sample) != 0 {
		return false
	}
	now := l.now()
	if s := now.Unix(); s != l.sec {
		l.sec, l.inSec = s, 0
	}
	if l.inSec >= l.cfg.Rate || l.err != nil {
		l.dropped++
		return false
	}
	rec := FromDecision(d, outcome)
	rec.Time = now.UTC().Format(time.RFC3339Nano)
	line, err := json.Marshal(rec)
	if err != nil {
		l.dropped++
		return false
	}
	line = append(line, '\n')
	if l.bytes+int64(len(line)) > l.cfg.MaxBytes {
		l.dropped++
		return false
	}
	if _, err := l.w.Write(line); err != nil {
		l.err = fmt.Errorf("decisionlog: write: %w", err)
		l.dropped++
		return false
	}
	l.bytes += int64(len(line))
	l.inSec++
	l.written++
	return true
}

// Stats returns the records written and dropped by the caps, and the
// first write error.
func (l *Writer) Stats() (written, dropped uint64, err error) {
	if l == nil {
		return 0, 0, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.written, l.dropped, l.err
}

// Close closes the file Open opened.
func (l *Writer) Close() error {
	if l == nil || l.c == nil {
		return nil
	}
	return l.c.Close()
}
