package adversarial

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/internal/e2e"
)

var (
	bins e2e.Binaries
	root string
)

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "kvrouter-adversarial-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	bins, err = e2e.Build(ctx, dir)
	if err == nil {
		root, err = e2e.ModuleRoot(ctx)
	}
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func skipShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("adversarial: starts real processes; skipped with -short")
	}
	if err := e2e.StatSources(root); err != nil {
		t.Fatal(err)
	}
}
