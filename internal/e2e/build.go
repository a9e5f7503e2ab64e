package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Binaries are the executables the tests run.
type Binaries struct {
	Kvrouter   string // go build ./cmd/kvrouter
	EPP        string // go build ./cmd/kvrouter-epp
	NATSServer string // go build github.com/nats-io/nats-server/v2, the version in go.mod
}

// natsServerPkg is the nats-server main package. The main module requires
// the nats-server module (the embedded server), so building it here uses
// exactly that version from the module cache: no network, no second pin.
const natsServerPkg = "github.com/nats-io/nats-server/v2"

// Build compiles the binaries into dir (without -race: the processes under
// test need not be race-built, and a plain build is several times faster).
func Build(ctx context.Context, dir string) (Binaries, error) {
	root, err := ModuleRoot(ctx)
	if err != nil {
		return Binaries{}, err
	}
	b := Binaries{Kvrouter: filepath.Join(dir, "kvrouter"), EPP: filepath.Join(dir, "kvrouter-epp"), NATSServer: filepath.Join(dir, "nats-server")}
	for _, job := range [][2]string{{b.Kvrouter, "./cmd/kvrouter"}, {b.EPP, "./cmd/kvrouter-epp"}, {b.NATSServer, natsServerPkg}} {
		if err := goCmd(ctx, root, "build", "-o", job[0], job[1]); err != nil {
			return Binaries{}, err
		}
	}
	return b, nil
}

// ModuleRoot is the directory of the main module's go.mod.
func ModuleRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("e2e: go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == "/dev/null" {
		return "", fmt.Errorf("e2e: not inside the kvrouter module")
	}
	return filepath.Dir(mod), nil
}

func goCmd(ctx context.Context, dir string, args ...string) error {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("e2e: go %s: %w\n%s", strings.Join(args, " "), err, out.String())
	}
	return nil
}

// StatSources stats every file of the module under root (hidden
// directories aside). NB: go test caches a passing result keyed on the
// files the test process opens or stats and the environment it reads; the
// go build it runs is invisible to it, so without this a change to
// cmd/kvrouter would be answered with a cached PASS. It must be called from
// a test, not TestMain: the log of opened files starts with m.Run.
func StatSources(root string) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		_, err = os.Stat(path)
		return err
	})
}
