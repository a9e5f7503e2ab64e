package trace

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

const sample = `{"timestamp": 0, "input_length": 6758, "output_length": 500, "hash_ids": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13]}

{"timestamp": 3052, "input_length": 700, "output_length": 1, "hash_ids": [0, 14]}
{"timestamp": 3052.5, "input_length": 10, "output_length": 0, "hash_ids": [15], "extra": true}
`

func gz(t *testing.T, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	if _, err := w.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestReadAll(t *testing.T) {
	want := []Record{
		{0, 6758, 500, []uint64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}},
		{3052 * time.Millisecond, 700, 1, []uint64{0, 14}},
		{3052*time.Millisecond + 500*time.Microsecond, 10, 0, []uint64{15}},
	}
	for name, data := range map[string][]byte{"plain": []byte(sample), "gzip": gz(t, sample)} {
		t.Run(name, func(t *testing.T) {
			got, err := ReadAll(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("got %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestReadErrors(t *testing.T) {
	for _, tc := range []struct {
		line, want string
	}{
		{`{"timestamp": 1, "input_length": 5, "output_length": 1}`, "missing hash_ids"},
		{`{"input_length": 5, "output_length": 1, "hash_ids": []}`, "missing timestamp"},
		{`{"timestamp": 1, "output_length": 1, "hash_ids": []}`, "missing input_length"},
		{`{"timestamp": 1, "input_length": 5, "hash_ids": []}`, "missing output_length"},
		{`{"timestamp": -1, "input_length": 5, "output_length": 1, "hash_ids": []}`, "timestamp -1"},
		{`{"timestamp": 1, "input_length": 5.5, "output_length": 1, "hash_ids": []}`, "input_length 5.5"},
		{`{"timestamp": 1, "input_length": -5, "output_length": 1, "hash_ids": []}`, "input_length -5"},
		{`{"timestamp": 1, "input_length": 5, "output_length": 1, "hash_ids": [1, -2]}`, "hash_ids[1] = -2"},
		{`{"timestamp": 1, "input_length": 5, "output_length": 1, "hash_ids": [1.5]}`, "hash_ids"},
		{`{"timestamp": 1, "input_length": 5, "output_length": 1, "hash_ids": "x"}`, "hash_ids"},
		{`{"timestamp": 1,`, "unexpected EOF"},
		{`{"timestamp": 1, "input_length": 5, "output_length": 1, "hash_ids": []} {}`, "trailing data"},
		{`[1,2]`, "cannot unmarshal"},
	} {
		input := `{"timestamp": 0, "input_length": 1, "output_length": 1, "hash_ids": [0]}` + "\n\n" + tc.line + "\n" +
			`{"timestamp": 9, "input_length": 1, "output_length": 1, "hash_ids": [3]}` + "\n"
		r, err := NewReader(strings.NewReader(input))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Read(); err != nil {
			t.Fatalf("first line: %v", err)
		}
		_, err = r.Read()
		if err == nil || !errors.Is(err, ErrSyntax) || !strings.Contains(err.Error(), "line 3:") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got error %v, want ErrSyntax at line 3 mentioning %q", tc.line, err, tc.want)
		}
		// Reading continues after a bad line.
		rec, err := r.Read()
		if err != nil || rec.Timestamp != 9*time.Millisecond || r.Line() != 4 {
			t.Errorf("%s: after the bad line got %+v, %v at line %d", tc.line, rec, err, r.Line())
		}
		if _, err := r.Read(); err != io.EOF {
			t.Errorf("want EOF, got %v", err)
		}
		if _, err := ReadAll(strings.NewReader(input)); !errors.Is(err, ErrSyntax) {
			t.Errorf("ReadAll: got %v, want ErrSyntax", err)
		}
	}
	if _, err := NewReader(bytes.NewReader([]byte{0x1f, 0x8b, 0, 0})); err == nil {
		t.Error("truncated gzip header: no error")
	}
	if _, err := ReadAll(bytes.NewReader(gz(t, sample)[:40])); err == nil {
		t.Error("truncated gzip stream: no error")
	}
}

func TestWriteRoundTrip(t *testing.T) {
	recs, err := ReadAll(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	recs[2].Timestamp = 3052 * time.Millisecond // Write rounds to ms
	var b bytes.Buffer
	if err := Write(&b, recs); err != nil {
		t.Fatal(err)
	}
	got, err := ReadAll(&b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, recs) {
		t.Fatalf("round trip: got %+v want %+v", got, recs)
	}
}

func TestTokens(t *testing.T) {
	rep := func(v uint32, n int) []uint32 {
		s := make([]uint32, n)
		for i := range s {
			s[i] = v
		}
		return s
	}
	for _, tc := range []struct {
		name  string
		rec   Record
		per   int
		want  []uint32
		dstIn []uint32
	}{
		{"trace blocks, last partial", Record{InputLength: 515, HashIDs: []uint64{7, 9}}, 512,
			append(rep(7, 512), rep(9, 3)...), nil},
		{"router block per id", Record{InputLength: 515, HashIDs: []uint64{7, 9}}, 4,
			append(rep(7, 4), rep(9, 4)...), nil},
		{"cut inside the first id", Record{InputLength: 3, HashIDs: []uint64{7, 9}}, 4, rep(7, 3), nil},
		{"ids run out", Record{InputLength: 100, HashIDs: []uint64{5}}, 8, rep(5, 8), nil},
		{"no ids", Record{InputLength: 100}, 8, nil, nil},
		{"appends to dst", Record{InputLength: 2, HashIDs: []uint64{1 << 33}}, 8, []uint32{42, 0, 0}, []uint32{42}},
	} {
		got := Tokens(tc.dstIn, &tc.rec, tc.per)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %d tokens %v..., want %d", tc.name, len(got), got[:min(len(got), 5)], len(tc.want))
		}
	}
}

func TestScaleLength(t *testing.T) {
	in := []Record{{Timestamp: 5, InputLength: 600, OutputLength: 3, HashIDs: []uint64{0, 4}}}
	got, err := ScaleLength(in, 3)
	if err != nil {
		t.Fatal(err)
	}
	want := []Record{{Timestamp: 5, InputLength: 1800, OutputLength: 3, HashIDs: []uint64{0, 1, 2, 12, 13, 14}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v want %+v", got, want)
	}
	if in[0].InputLength != 600 || len(in[0].HashIDs) != 2 {
		t.Fatal("input modified")
	}
	if _, err := ScaleLength(in, 0); err == nil {
		t.Fatal("factor 0 accepted")
	}
}

func TestDuplicate(t *testing.T) {
	in := []Record{
		{Timestamp: 1, InputLength: 2, HashIDs: []uint64{0, 1}},
		{Timestamp: 2, InputLength: 2, HashIDs: []uint64{0, 2}},
	}
	got, err := Duplicate(in, 2)
	if err != nil {
		t.Fatal(err)
	}
	want := []Record{
		{Timestamp: 1, InputLength: 2, HashIDs: []uint64{0, 1}},
		{Timestamp: 1, InputLength: 2, HashIDs: []uint64{3, 4}},
		{Timestamp: 2, InputLength: 2, HashIDs: []uint64{0, 2}},
		{Timestamp: 2, InputLength: 2, HashIDs: []uint64{3, 5}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v want %+v", got, want)
	}
	if _, err := Duplicate(in, 0); err == nil {
		t.Fatal("factor 0 accepted")
	}
}

func TestTimeTransforms(t *testing.T) {
	in := []Record{{Timestamp: 100 * time.Millisecond}, {Timestamp: 300 * time.Millisecond}, {Timestamp: 500 * time.Millisecond}}
	got, err := ScaleTime(in, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Timestamp != 50*time.Millisecond || got[2].Timestamp != 250*time.Millisecond || in[2].Timestamp != 500*time.Millisecond {
		t.Fatalf("ScaleTime: %+v", got)
	}
	got, err = RescaleSpan(in, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Timestamp != 0 || got[1].Timestamp != time.Second || got[2].Timestamp != 2*time.Second {
		t.Fatalf("RescaleSpan: %+v", got)
	}
	for _, f := range []float64{0, -1} {
		if _, err := ScaleTime(in, f); err == nil {
			t.Errorf("ScaleTime(%v) accepted", f)
		}
	}
	if _, err := RescaleSpan(in, -1); err == nil {
		t.Error("negative span accepted")
	}
}

func TestPartition(t *testing.T) {
	recs := make([]Record, 4000)
	for i := range recs {
		recs[i].Timestamp = time.Duration(i)
	}
	a, err := Partition(recs, 8, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Partition(recs, 8, rand.New(rand.NewPCG(1, 2)))
	c, _ := Partition(recs, 8, rand.New(rand.NewPCG(3, 2)))
	if !reflect.DeepEqual(a, b) {
		t.Fatal("same seed, different partitions")
	}
	if reflect.DeepEqual(a, c) {
		t.Fatal("different seeds, same partition")
	}
	total := 0
	for w, part := range a {
		total += len(part)
		if len(part) < 400 || len(part) > 600 {
			t.Errorf("worker %d got %d of 4000 requests", w, len(part))
		}
		if !slices.IsSortedFunc(part, func(x, y Record) int { return int(x.Timestamp - y.Timestamp) }) {
			t.Errorf("worker %d: order not kept", w)
		}
	}
	if total != len(recs) {
		t.Fatalf("partition holds %d of %d", total, len(recs))
	}
	if _, err := Partition(recs, 0, rand.New(rand.NewPCG(1, 2))); err == nil {
		t.Fatal("0 workers accepted")
	}
}

// TestConversationTrace checks the README's stated properties of the
// Mooncake conversation trace (../shared/data from the module root).
func TestConversationTrace(t *testing.T) {
	path := filepath.Join("..", "..", "shared", "data", "conversation_trace.jsonl.gz")
	if _, err := os.Stat(path); err != nil {
		t.Skipf("conversation trace not found at %s (expected beside the repository): %v", path, err)
	}
	recs, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 12031 {
		t.Fatalf("%d records, want 12031", len(recs))
	}
	pred := map[uint64]int64{} // id -> predecessor (-1 for a root)
	var next uint64
	var in, out, refs, reused, maxIn int
	for i, r := range recs {
		if i > 0 && r.Timestamp < recs[i-1].Timestamp {
			t.Fatalf("line %d: timestamp decreases", i+1)
		}
		if len(r.HashIDs) != r.NumBlocks() {
			t.Fatalf("line %d: %d hash ids for input %d", i+1, len(r.HashIDs), r.InputLength)
		}
		in += r.InputLength
		out += r.OutputLength
		maxIn = max(maxIn, r.InputLength)
		for j, h := range r.HashIDs {
			p := int64(-1)
			if j > 0 {
				p = int64(r.HashIDs[j-1])
			}
			refs++
			if old, ok := pred[h]; ok {
				reused++
				if old != p {
					t.Fatalf("line %d: id %d has predecessor %d, earlier %d", i+1, h, p, old)
				}
				continue
			}
			if h != next {
				t.Fatalf("line %d: new id %d, want dense id %d", i+1, h, next)
			}
			next++
			pred[h] = p
		}
	}
	if next != 182790 {
		t.Errorf("ids 0..%d, want 0..182789", next-1)
	}
	if got := recs[len(recs)-1].Timestamp; got != 3536999*time.Millisecond {
		t.Errorf("last timestamp %v", got)
	}
	if share := 100 * float64(reused) / float64(refs); refs != 288500 || share < 36.55 || share >= 36.65 {
		t.Errorf("%d block references (want 288,500), %.2f%% reused (want 36.6%%)", refs, share)
	}
	meanIn, meanOut := float64(in)/float64(len(recs)), float64(out)/float64(len(recs))
	if meanIn < 12034 || meanIn > 12036 || meanOut < 342.5 || meanOut > 343.5 || maxIn != 126195 {
		t.Errorf("mean input %.1f, mean output %.1f, max input %d", meanIn, meanOut, maxIn)
	}
	t.Logf("block reuse %.1f%% of %d references", 100*float64(reused)/float64(refs), refs)
}

func FuzzRead(f *testing.F) {
	f.Add([]byte(sample))
	f.Add([]byte(`{"timestamp": 1e3, "input_length": 0, "output_length": 0, "hash_ids": []}`))
	f.Add([]byte{0x1f, 0x8b})
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := NewReader(bytes.NewReader(data))
		if err != nil {
			return
		}
		for range 1000 {
			rec, err := r.Read()
			if err == io.EOF {
				return
			}
			if err != nil {
				if !errors.Is(err, ErrSyntax) && !strings.Contains(err.Error(), "trace: read") {
					t.Fatalf("unexpected error kind: %v", err)
				}
				continue
			}
			if rec.Timestamp < 0 || rec.InputLength < 0 || rec.OutputLength < 0 {
				t.Fatalf("invalid record accepted: %+v", rec)
			}
		}
	})
}
