// Package wordfreq counts the words of a text.
package wordfreq

import (
	"sort"
	"strings"
	"unicode"
)

// Count is a word and how often it occurs.
type Count struct {
	Word string
	N    int
}

// Top returns the n most frequent words, case-insensitively, most frequent
// first and alphabetically among equals.
func Top(text string, n int) []Count {
	counts := map[string]int{}
	for _, w := range strings.FieldsFunc(text, func(r rune) bool { return !unicode.IsLetter(r) && r != '\'' }) {
		counts[w]++
	}
	var out []Count
	for w, c := range counts {
		out = append(out, Count{w, c})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].N != out[j].N {
			return out[i].N > out[j].N
		}
		return out[i].Word < out[j].Word
	})
	if len(out) > n {
		out = out[:n]
	}
	return out
}
