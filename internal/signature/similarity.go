package signature

import (
	"regexp"
	"strings"
	"unicode"
)

// Weights of the three parts of Similarity; they sum to 1.
const (
	kindWeight  = 0.5
	shapeWeight = 0.3
	textWeight  = 0.2
)

// Similarity scores how alike two signatures are, in [0, 1]: the kind
// counts most, then word overlap of the shapes, then trigram overlap of the
// key lines, the measure pg_trgm computes, so SQL backends can approximate
// this ranking.
func Similarity(a, b Signature) float64 {
	return kindWeight*kindSimilarity(a.Kind, b.Kind) +
		shapeWeight*jaccard(tokens(a.Shape), tokens(b.Shape)) +
		textWeight*jaccard(trigrams(a.Text), trigrams(b.Text))
}

// kindSimilarity gives partial credit to kinds that share leading
// segments, such as two Go compile errors.
func kindSimilarity(a, b string) float64 {
	if a == b {
		return 1
	}
	as, bs := strings.Split(a, ":"), strings.Split(b, ":")
	common := 0
	for common < len(as) && common < len(bs) && as[common] == bs[common] {
		common++
	}
	if common == 0 {
		return 0
	}
	return 0.5 * float64(common) / float64(max(len(as), len(bs)))
}

var tokenRe = regexp.MustCompile(`<[a-z]+>|[A-Za-z_][A-Za-z0-9_]*`)

// tokens is the set of lowercased words and placeholders of s.
func tokens(s string) map[string]struct{} {
	set := map[string]struct{}{}
	for _, t := range tokenRe.FindAllString(s, -1) {
		set[strings.ToLower(t)] = struct{}{}
	}
	return set
}

// trigrams is the pg_trgm trigram set of s: each alphanumeric word,
// lowercased and padded with two spaces before and one after.
func trigrams(s string) map[string]struct{} {
	set := map[string]struct{}{}
	words := strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	for _, w := range words {
		r := []rune("  " + w + " ")
		for i := 0; i+3 <= len(r); i++ {
			set[string(r[i:i+3])] = struct{}{}
		}
	}
	return set
}

// jaccard is |a∩b| / |a∪b|; two empty sets are identical.
func jaccard[K comparable](a, b map[K]struct{}) float64 {
	if len(a) == 0 && len(b) == 0 {
		return 1
	}
	inter := 0
	for k := range a {
		if _, ok := b[k]; ok {
			inter++
		}
	}
	return float64(inter) / float64(len(a)+len(b)-inter)
}
