package progress

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
)

// Bar reports the progress of one run of Total units (requests).
type Bar struct {
	mu    sync.Mutex
	pb    *progressbar.ProgressBar // terminal; nil writes lines
	w     io.Writer
	desc  string
	total int64
	done  int64
	shown int64 // quarters already written as lines
}

// IsTerminal reports whether w is a terminal: an *os.File that is a
// character device, as os.Stderr is on an interactive shell (and not when
// redirected to a file or a pipe). /dev/null counts too, harmlessly.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// New returns a bar on w for a run of total requests, labelled desc: a
// live bar when w is a terminal, lines at 25, 50, 75 and 100% otherwise.
// It returns nil (no progress) when w is nil.
func New(w io.Writer, total int64, desc string) *Bar {
	if w == nil {
		return nil
	}
	b := &Bar{w: w, desc: desc, total: total}
	if IsTerminal(w) {
		b.pb = progressbar.NewOptions64(total,
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription(desc),
			progressbar.OptionShowCount(),
			progressbar.OptionSetItsString("req"),
			progressbar.OptionShowIts(),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish(),
		)
	}
	return b
}

// Func returns a callback for runs that report (done, total), such as
// sim.Progress: the bar starts at the first call.
func Func(w io.Writer, desc string) func(done, total int64) {
	var b *Bar
	var once sync.Once
	return func(done, total int64) {
		once.Do(func() { b = New(w, total, desc) })
		b.Set(done)
		if done >= total {
			b.Finish()
		}
	}
}

// Add counts n more units done.
func (b *Bar) Add(n int64) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.set(b.done + n)
}

// Set sets the units done.
func (b *Bar) Set(done int64) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.set(done)
}

func (b *Bar) set(done int64) {
	b.done = done
	if b.pb != nil {
		_ = b.pb.Set64(done)
		return
	}
	if b.total <= 0 {
		return
	}
	q := min(4*done/b.total, 4)
	if q > b.shown {
		b.shown = q
		fmt.Fprintf(b.w, "%s: %d/%d (%d%%)\n", b.desc, done, b.total, 25*q)
	}
}

// Finish ends the bar (a terminal bar clears itself).
func (b *Bar) Finish() {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.pb != nil {
		_ = b.pb.Finish()
	}
}
