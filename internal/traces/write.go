package traces

import (
	"compress/gzip"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/kvrouter/kvrouter/trace"
)

// WriteFile writes recs to path as Mooncake JSON Lines (trace.Write),
// gzip-compressed (best compression) when path ends in .gz: the format
// Load reads back.
func WriteFile(path string, recs []trace.Record) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return err // *PathError names the file; kept as the commands print it
	}
	defer func() {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("traces: %w", cerr)
		}
	}()
	if !strings.HasSuffix(path, ".gz") {
		return trace.Write(f, recs)
	}
	gz, err := gzip.NewWriterLevel(f, gzip.BestCompression)
	if err != nil {
		return fmt.Errorf("traces: %w", err)
	}
	return errors.Join(trace.Write(gz, recs), gz.Close())
}
