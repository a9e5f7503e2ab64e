package oai

import (
	"encoding/json"
	"fmt"
	"testing"
)

func BenchmarkParseCompletion(b *testing.B) {
	for _, n := range []int{256, 8192} {
		toks := make([]uint32, n)
		for i := range toks {
			toks[i] = uint32(i * 7919 % 150000)
		}
		p, _ := json.Marshal(toks)
		body := []byte(fmt.Sprintf(`{"model":"m","prompt":%s,"max_tokens":16,"stream":true}`, p))
		// path=general is the decode without decodeTokenLists.
		for _, fast := range []bool{true, false} {
			path := map[bool]string{true: "tokenlists", false: "general"}[fast]
			b.Run(fmt.Sprintf("tokens=%d/path=%s", n, path), func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(body)))
				for b.Loop() {
					if _, err := parseCompletion(body, fast); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
			})
		}
	}
}
