package trace

import (
	"bufio"
	"compress/gzip"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// ReadAzureCSV reads an Azure LLM inference trace (Azure/AzurePublicDataset,
// AzureLLMInferenceTrace_*.csv, plain or gzip): a header
// TIMESTAMP,ContextTokens,GeneratedTokens, then one request a row with a
// wall-clock timestamp such as "2023-11-16 18:17:03.9799600". Records get
// timestamps relative to the first row and no hash ids: the trace carries
// no prefix information (see SynthesizePrefixes).
func ReadAzureCSV(r io.Reader) ([]Record, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var src io.Reader = br
	if magic, err := br.Peek(2); err == nil && magic[0] == 0x1f && magic[1] == 0x8b {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("trace: open gzip: %w", err)
		}
		defer gz.Close()
		src = gz
	}
	cr := csv.NewReader(src)
	cr.FieldsPerRecord = 3
	head, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("trace: azure header: %w", err)
	}
	if strings.TrimSpace(head[0]) != "TIMESTAMP" {
		return nil, fmt.Errorf("%w: azure header %q, want TIMESTAMP,ContextTokens,GeneratedTokens", ErrSyntax, strings.Join(head, ","))
	}
	var out []Record
	var first time.Time
	for line := 2; ; line++ {
		row, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: azure line %d: %w", ErrSyntax, line, err)
		}
		ts, err := time.Parse("2006-01-02 15:04:05.999999999", strings.TrimSpace(row[0]))
		if err != nil {
			return nil, fmt.Errorf("%w: azure line %d: %w", ErrSyntax, line, err)
		}
		in, err1 := strconv.Atoi(strings.TrimSpace(row[1]))
		outLen, err2 := strconv.Atoi(strings.TrimSpace(row[2]))
		if err := errors.Join(err1, err2); err != nil || in < 0 || outLen < 0 {
			return nil, fmt.Errorf("%w: azure line %d: bad lengths %q, %q", ErrSyntax, line, row[1], row[2])
		}
		if len(out) == 0 {
			first = ts
		}
		d := ts.Sub(first)
		if d < 0 || (len(out) > 0 && d < out[len(out)-1].Timestamp) {
			return nil, fmt.Errorf("%w: azure line %d: timestamp goes backwards", ErrSyntax, line)
		}
		out = append(out, Record{Timestamp: d, InputLength: in, OutputLength: outLen})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: azure trace has no rows", ErrSyntax)
	}
	return out, nil
}
