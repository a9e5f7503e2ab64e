package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// logTail is how much of a process's log a failing test prints.
const logTail = 32 << 10

// Proc is one child process with its output captured to a file. Start
// registers a cleanup that stops it (SIGTERM, then SIGKILL after
// StopTimeout) and, when the test failed, logs the tail of its output.
// Safe for concurrent use.
type Proc struct {
	Name    string   // for messages: "mocker1", "router2", "n3"
	Path    string   // binary
	Args    []string // arguments, kept for Restart
	Env     []string // extra environment (KEY=VALUE), kept for Restart
	LogFile string   // stdout and stderr

	t    testing.TB
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
	mu   sync.Mutex
	err  error // Wait's result, once done
}

// StopTimeout bounds how long Stop waits after SIGTERM before SIGKILL.
const StopTimeout = 10 * time.Second

// starts counts Start calls per name, so a restarted process gets its own
// log file.
var (
	startsMu sync.Mutex
	starts   = map[string]int{}
)

// Start runs path with args. The log goes to <TempDir>/<name>.<n>.log.
func Start(t testing.TB, name, path string, args ...string) *Proc {
	t.Helper()
	return StartEnv(t, name, path, nil, args...)
}

// StartEnv is Start with env (KEY=VALUE) added to the test's environment.
func StartEnv(t testing.TB, name, path string, env []string, args ...string) *Proc {
	t.Helper()
	startsMu.Lock()
	starts[t.Name()+"/"+name]++
	n := starts[t.Name()+"/"+name]
	startsMu.Unlock()
	p := &Proc{Name: name, Path: path, Args: args, Env: env, t: t, done: make(chan struct{}),
		LogFile: filepath.Join(t.TempDir(), name+"."+strconv.Itoa(n)+".log")}
	f, err := os.Create(p.LogFile)
	if err != nil {
		t.Fatalf("e2e: %s: %v", name, err)
	}
	p.cmd = exec.Command(path, args...)
	if len(env) > 0 {
		p.cmd.Env = append(os.Environ(), env...)
	}
	p.cmd.Stdout, p.cmd.Stderr = f, f
	// Own process group, so a signal meant for the test does not reach it
	// and kill -9 hits exactly this process.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		f.Close()
		t.Fatalf("e2e: start %s: %v", name, err)
	}
	go func() {
		err := p.cmd.Wait()
		f.Close()
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.Stop()
		if t.Failed() {
			t.Logf("--- %s (%s %q), exit %v, log tail:\n%s", p.Name, filepath.Base(p.Path), p.Args, p.ExitErr(), p.Log(logTail))
		}
	})
	return p
}

// Restart starts the same binary with the same arguments (the old process
// must have exited: Kill or Stop it first).
func (p *Proc) Restart(t testing.TB) *Proc {
	t.Helper()
	if !p.Exited() {
		t.Fatalf("e2e: restart %s while it runs", p.Name)
	}
	return StartEnv(t, p.Name, p.Path, p.Env, p.Args...)
}

// Done is closed when the process has exited.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Exited reports whether the process has exited.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// ExitErr is the process's exit error (nil while running or after a clean
// exit).
func (p *Proc) ExitErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// ExitReport says how the process ended and what it wrote last: a
// process that exits at start says why on its last lines, which a failure
// message should carry (the log tail printed at cleanup can be long).
func (p *Proc) ExitReport() string {
	lines := strings.Split(strings.TrimRight(p.Log(4<<10), "\n"), "\n")
	lines = lines[max(0, len(lines)-exitLines):]
	for i, l := range lines {
		if len(l) > 400 {
			lines[i] = l[:400] + "..."
		}
	}
	return fmt.Sprintf("%s exited (%v); last output:\n%s", p.Name, p.ExitErr(), strings.Join(lines, "\n"))
}

// exitLines is how many last lines of output ExitReport quotes.
const exitLines = 5

// Kill sends SIGKILL (kill -9) and waits for the process to be gone.
func (p *Proc) Kill() {
	if !p.Exited() {
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
	}
	<-p.done
}

// Stop sends SIGTERM, waits up to StopTimeout, then kills. It returns the
// exit error (nil for a clean exit; a killed process reports its signal).
func (p *Proc) Stop() error {
	if !p.Exited() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		timer := time.NewTimer(StopTimeout)
		defer timer.Stop()
		select {
		case <-p.done:
		case <-timer.C:
			p.Kill()
		}
	}
	<-p.done
	return p.ExitErr()
}

// Log returns the last max bytes of the process's output (all with max <= 0).
func (p *Proc) Log(max int) string {
	b, err := os.ReadFile(p.LogFile)
	if err != nil {
		return fmt.Sprintf("(log unreadable: %v)", err)
	}
	if max > 0 && len(b) > max {
		b = b[len(b)-max:]
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
		return "...\n" + string(b)
	}
	return string(b)
}

// FreePorts returns n distinct free TCP ports on 127.0.0.1. The listeners
// are held until all n are picked, so the ports differ; another process may
// still take one before the caller binds it, which is rare on loopback.
func FreePorts(t testing.TB, n int) []int {
	t.Helper()
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	out := make([]int, 0, n)
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("e2e: free port: %v", err)
		}
		lns = append(lns, ln)
		out = append(out, ln.Addr().(*net.TCPAddr).Port)
	}
	return out
}

// WaitFor polls cond every 25 ms until it returns true, and fails the test
// with what and cond's last detail after timeout. It never sleeps blindly:
// a poll interval bounds the latency, the deadline bounds the test.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() (ok bool, detail string)) {
	t.Helper()
	if err := Poll(context.Background(), timeout, cond); err != nil {
		t.Fatalf("e2e: waiting for %s: %v", what, err)
	}
}

// Poll is WaitFor returning an error instead of failing the test.
func Poll(ctx context.Context, timeout time.Duration, cond func() (bool, string)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	detail := ""
	for {
		var ok bool
		if ok, detail = cond(); ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w after %v (last: %s)", errTimeout, timeout, detail)
		case <-tick.C:
		}
	}
}

var errTimeout = errors.New("timed out")
