package profile

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// StartCPU starts a CPU profile written to path. The returned stop ends the
// profile and closes the file; call it once, after the profiled work.
// An empty path profiles nothing and returns a no-op stop.
func StartCPU(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// WriteAllocs writes the allocation profile (pprof "allocs": heap samples
// since the start, see -sample_index=alloc_space) to path.
func WriteAllocs(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("heap profile: %w", err)
	}
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		f.Close()
		return fmt.Errorf("heap profile: %w", err)
	}
	return f.Close()
}
