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

// Config is the decision log's file and bounds. Zero bounds take the
// defaults.
type Config struct {
	// Path is the log file, appended to; "" = no log. Default "".
	Path string `yaml:"path"`
	// Sample keeps one decision in Sample (1: all). Default 1.
	Sample int `yaml:"sample"`
	// MaxBytes caps the file's size; past it the writer stops (counting
	// drops). Default DefaultMaxBytes (64 MiB).
	MaxBytes int64 `yaml:"max_bytes"`
	// Rate caps the records written per second. Default DefaultRate.
	Rate int `yaml:"rate"`
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

// Open opens (appending) or creates the log at cfg.Path; nil, nil when
// the path is "".
func Open(cfg Config) (*Writer, error) {
	if cfg.Path == "" {
		return nil, nil
	}
	f, err := os.OpenFile(cfg.Path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
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

// Sample is called before routing a request: it returns the Inputs to
// set as router.Request.Inputs for one request in Sample (the first, then
// every Sample-th), nil for the others. Only a sampled decision is logged.
func (l *Writer) Sample() *router.Inputs {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen++
	if (l.seen-1)%uint64(l.cfg.Sample) != 0 {
		return nil
	}
	return new(router.Inputs)
}

// Log records the sampled decision d (d.Inputs set by Sample) with its
// outcome if the rate and size caps let it; it reports whether the record
// was written. Decisions Sample skipped are not logged.
func (l *Writer) Log(d *router.Decision, outcome string) bool {
	if l == nil || d == nil || d.Queued || d.Inputs == nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
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
	if err != nil { // a non-finite input: log the decision without them
		rec.In, rec.CfgDigest = nil, ""
		if line, err = json.Marshal(rec); err != nil {
			l.dropped++
			return false
		}
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
