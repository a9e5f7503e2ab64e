package zmqguard

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEverySocketGuarded: a (non-test) file of the module that creates a
// zmq4 socket also gives it a guarded endpoint (Endpoint): a socket on a
// plain tcp:// endpoint would read frames of any declared size again.
func TestEverySocketGuarded(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found: %v", err)
	}
	var sockets int
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		src := string(b)
		if !strings.Contains(src, "zmq4.New") || strings.Contains(src, "zmq4.NewMsg") && strings.Count(src, "zmq4.New") == strings.Count(src, "zmq4.NewMsg") {
			return nil
		}
		sockets++
		if !strings.Contains(src, "zmqguard.Endpoint(") {
			t.Errorf("%s creates a zmq4 socket without zmqguard.Endpoint", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if sockets < 3 { // zmqsub (bind, dial), mockerd
		t.Fatalf("found %d files creating zmq4 sockets; the walk missed them", sockets)
	}
}
