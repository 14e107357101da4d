// Package textdist measures how far apart two words are, for the «did you mean» of what people and
// operators mistype: a Caddyfile's rate-limit zone, a town's name.
package textdist

// Distance is the optimal string alignment distance between a and b, byte by byte (callers fold their
// words to ASCII first): the fewest insertions, deletions, substitutions and swaps of two adjacent
// letters that turn one into the other, each letter edited once («pereria» is one swap from «pereira»).
func Distance(a, b string) int {
	// Three rows of the dynamic programme: two back, for a swap.
	back, prev, cur := make([]int, len(b)+1), make([]int, len(b)+1), make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], back[j-2]+1)
			}
		}
		back, prev, cur = prev, cur, back
	}
	return prev[len(b)]
}
