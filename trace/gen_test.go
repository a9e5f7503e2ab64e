package trace

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"
)

// checkTree verifies the Mooncake invariants: ceil(input/512) ids, and
// every id always has the same predecessor (the ids form a prefix tree).
func checkTree(t *testing.T, recs []Record) {
	t.Helper()
	parent := map[uint64]int64{}
	for i, r := range recs {
		if len(r.HashIDs) != r.NumBlocks() {
			t.Fatalf("record %d: %d ids for %d tokens", i, len(r.HashIDs), r.InputLength)
		}
		for k, h := range r.HashIDs {
			p := int64(-1)
			if k > 0 {
				p = int64(r.HashIDs[k-1])
			}
			if q, ok := parent[h]; ok && q != p {
				t.Fatalf("record %d: id %d has parents %d and %d", i, h, q, p)
			}
			parent[h] = p
		}
		if i > 0 && r.Timestamp < recs[i-1].Timestamp {
			t.Fatalf("record %d: timestamps not sorted", i)
		}
	}
}

// reuse is the infinite-cache block reuse fraction.
func reuse(recs []Record) float64 {
	seen := map[uint64]bool{}
	hit, all := 0, 0
	for _, r := range recs {
		for _, h := range r.HashIDs {
			all++
			if seen[h] {
				hit++
			}
			seen[h] = true
		}
	}
	return float64(hit) / float64(all)
}

func TestSynth(t *testing.T) {
	cfg := DefaultSynthConfig()
	cfg.Requests = 2000
	a, err := Synth(cfg, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Synth(cfg, rand.New(rand.NewPCG(1, 2)))
	if len(a) != cfg.Requests || !slices.EqualFunc(a, b, func(x, y Record) bool {
		return x.Timestamp == y.Timestamp && x.InputLength == y.InputLength && slices.Equal(x.HashIDs, y.HashIDs)
	}) {
		t.Fatal("same seed, different traces (or wrong length)")
	}
	checkTree(t, a)
	// Sharing knobs move reuse the expected way.
	none := cfg
	none.PrefixShare, none.MeanTurns = 0, 1
	c, _ := Synth(none, rand.New(rand.NewPCG(1, 2)))
	if r := reuse(c); r != 0 {
		t.Errorf("no system prompts, single turns: reuse %v, want 0", r)
	}
	if ra := reuse(a); ra < 0.3 {
		t.Errorf("default synth reuse %v, want >= 0.3", ra)
	}
	// Round trip through the writer and reader.
	var buf bytes.Buffer
	if err := Write(&buf, a[:50]); err != nil {
		t.Fatal(err)
	}
	back, err := ReadAll(&buf)
	if err != nil || len(back) != 50 || back[49].InputLength != a[49].InputLength || !slices.Equal(back[49].HashIDs, a[49].HashIDs) {
		t.Fatalf("round trip: %v", err)
	}
}

func TestPrefixes(t *testing.T) {
	px := NewPrefixes(2, 2) // system prompts: ids 0,1 and 2,3
	c := px.Start(1, 1<<20)
	if got := px.Prompt(c, 1100); !slices.Equal(got, []uint64{2, 3, 4}) {
		t.Errorf("first turn ids %v", got) // 1024 system + 76: a partial third block
	}
	px.Answer(c, 100) // context 1200: still 2 complete blocks
	if got := px.Prompt(c, 1600); !slices.Equal(got, []uint64{2, 3, 5, 6}) {
		t.Errorf("second turn ids %v", got) // block 2 now complete (new id 5), partial 6
	}
	d := px.Start(1, 600) // truncated to one block of the system prompt
	if got := px.Prompt(d, 600); !slices.Equal(got, []uint64{2, 7}) {
		t.Errorf("truncated system prompt ids %v", got)
	}
}

func TestAzure(t *testing.T) {
	csv := "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n2023-11-16 18:15:50.9951690,396,109\n2023-11-16 18:15:50.9951690,879,28"
	recs, err := ReadAzureCSV(bytes.NewReader([]byte(csv)))
	if err != nil || len(recs) != 3 {
		t.Fatal(err, len(recs))
	}
	if recs[1].Timestamp.Milliseconds() != 4314 || recs[2].InputLength != 879 || recs[2].OutputLength != 28 {
		t.Errorf("records %+v", recs)
	}
	m := DefaultPrefixModel()
	m.Continue = 1
	out, err := SynthesizePrefixes(recs, m, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	checkTree(t, out)
	// Request 2 (396 tokens) cannot continue request 1 (context 374+44 =
	// 418 > 396): new; request 3 (879) continues the most recent fitting
	// one, request 2 (396+109 = 505 tokens, no complete block yet), so it
	// shares nothing either; with a 1024-token system prompt and share 1
	// every new conversation starts with the same first id when it fits.
	if len(out[2].HashIDs) != 2 {
		t.Errorf("ids %v", out[2].HashIDs)
	}
	if _, err := ReadAzureCSV(bytes.NewReader([]byte("a,b,c\n1,2,3"))); err == nil {
		t.Error("bad header accepted")
	}
}
