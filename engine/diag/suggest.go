package diag

import "strings"

// Suggest returns the candidate closest to got by edit distance (insertions,
// deletions, substitutions and swaps of adjacent letters), when one is close enough to
// be a likely misspelling: at most one edit for names up to four letters, two up to
// eight, three beyond; the plural of got (policy: policies) counts as one edit. It
// returns "" when none is, and the first of equally close ones.
func Suggest(got string, candidates []string) string {
	best, bestDist := "", -1
	limit := 3
	switch n := len([]rune(got)); {
	case n <= 4:
		limit = 1
	case n <= 8:
		limit = 2
	}
	for _, c := range candidates {
		if c == got {
			continue
		}
		d := distance(got, c)
		if c == got+"s" || c == strings.TrimSuffix(got, "y")+"ies" {
			d = 1
		}
		if d <= limit && (bestDist < 0 || d < bestDist) {
			best, bestDist = c, d
		}
	}
	return best
}

// DidYouMean is ` (did you mean "x"?)` for Suggest's answer, or "".
func DidYouMean(got string, candidates []string) string {
	if s := Suggest(got, candidates); s != "" {
		return ` (did you mean "` + s + `"?)`
	}
	return ""
}

// distance is the optimal string alignment distance of a and b, by runes.
func distance(a, b string) int {
	s, t := []rune(a), []rune(b)
	prev2 := make([]int, len(t)+1)
	prev := make([]int, len(t)+1)
	cur := make([]int, len(t)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(s); i++ {
		cur[0] = i
		for j := 1; j <= len(t); j++ {
			cost := 1
			if s[i-1] == t[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && s[i-1] == t[j-2] && s[i-2] == t[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(t)]
}
