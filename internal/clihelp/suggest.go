package clihelp

import "strings"

// Suggest returns the candidate closest to name, or "" when none is close:
// within an edit distance (a transposition counting one) of max(1,
// len(name)/4), or one a prefix of the other (--worker-url for --worker).
// Ties go to the earlier candidate.
func Suggest(name string, candidates []string) string {
	best, bestD := "", 0
	limit := max(1, len(name)/4)
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

// distance is the edit distance of a and b in bytes, an adjacent
// transposition counting as one edit (optimal string alignment).
func distance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			sub := d[i-1][j-1]
			if a[i-1] != b[j-1] {
				sub++
			}
			d[i][j] = min(sub, d[i-1][j]+1, d[i][j-1]+1)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}
