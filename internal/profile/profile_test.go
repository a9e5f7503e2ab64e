package profile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestStartCPUWritesProfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cpu.prof")
	stop, err := StartCPU(path)
	if err != nil {
		t.Fatal(err)
	}
	// A second profile while one runs is refused, and leaves the first alone.
	if _, err := StartCPU(filepath.Join(t.TempDir(), "other.prof")); err == nil {
		t.Error("second StartCPU: no error")
	}
	stop()
	if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
		t.Fatalf("profile %v, err %v: want a non-empty file", fi, err)
	}
}

func TestStartCPUEmptyPath(t *testing.T) {
	stop, err := StartCPU("")
	if err != nil {
		t.Fatal(err)
	}
	stop()
}

func TestWriteAllocs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mem.prof")
	if err := WriteAllocs(path); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
		t.Fatalf("profile %v, err %v: want a non-empty file", fi, err)
	}
	err := WriteAllocs(filepath.Join(t.TempDir(), "missing", "mem.prof"))
	if err == nil || !strings.Contains(err.Error(), "heap profile") {
		t.Fatalf("err %v, want a heap profile error", err)
	}
}
