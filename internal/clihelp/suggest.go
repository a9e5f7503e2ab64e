package clihelp

import "strings"

// Suggest returns the candidate closest to name, or "" when none is close:
// within an edit distance of max(2, len(name)/4), or one a prefix of the
// other (--worker-url for --worker). Ties go to the earlier candidate.
func Suggest(name string, candidates []string) string {
	best, bestD := "", 0
	limit := max(2, len(name)/4)
	for _, c := range candidates {
		d := distance(name, c)
		near := d <= limit ||
			(min(len(name), len(c)) >= 3 && (strings.HasPrefix(name, c) || strings.HasPrefix(c, name)))
		if near && d > 0 && (best == "" || d < bestD) {
			best, bestD = c, d
		}
	}
	return best
}

// distance is the Levenshtein distance of a and b (bytes).
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			sub := prev[j-1]
			if a[i-1] != b[j-1] {
				sub++
			}
			cur[j] = min(sub, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
