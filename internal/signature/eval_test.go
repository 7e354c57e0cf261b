package signature

import (
	"crypto/sha256"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const topK = 3

// errorLineRe picks the lines a person would call "the error".
var errorLineRe = regexp.MustCompile(`(?i)error|exception|panic|fail|killed|undefined|declared and not used|missing return`)

// lastErrorLine is the exact-match baseline's key: the last raw line of the
// output that looks like an error, verbatim.
func lastErrorLine(output string) string {
	lines := strings.Split(strings.TrimSpace(output), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if errorLineRe.MatchString(lines[i]) {
			return strings.TrimSpace(lines[i])
		}
	}
	return ""
}

// corpusOrder sorts samples by a hash of their file name, so ties fall in
// an order unrelated to the bug class the names might hint at.
func corpusOrder(samples []sample) []sample {
	out := slices.Clone(samples)
	slices.SortFunc(out, func(a, b sample) int {
		ha, hb := sha256.Sum256([]byte(a.File)), sha256.Sum256([]byte(b.File))
		return strings.Compare(string(ha[:]), string(hb[:]))
	})
	return out
}

// precisionAtK ranks, for each sample as a query, all other samples by
// score (higher first, ties in corpus order) and returns the mean fraction
// of the top k that share the query's class.
func precisionAtK(samples []sample, k int, score func(q, c int) float64) float64 {
	total := 0.0
	for q := range samples {
		cands := make([]int, 0, len(samples)-1)
		for c := range samples {
			if c != q {
				cands = append(cands, c)
			}
		}
		scores := make(map[int]float64, len(cands))
		for _, c := range cands {
			scores[c] = score(q, c)
		}
		slices.SortStableFunc(cands, func(a, b int) int {
			switch {
			case scores[a] > scores[b]:
				return -1
			case scores[a] < scores[b]:
				return 1
			}
			return 0
		})
		hits := 0
		for _, c := range cands[:k] {
			if samples[c].Class == samples[q].Class {
				hits++
			}
		}
		total += float64(hits) / float64(k)
	}
	return total / float64(len(samples))
}

func TestRecallPrecision(t *testing.T) {
	samples := corpusOrder(loadDataset(t))
	classes := map[string]int{}
	for _, s := range samples {
		classes[s.Class]++
	}
	if len(samples) < 50 || len(classes) < 15 {
		t.Fatalf("dataset too small: %d outputs in %d classes", len(samples), len(classes))
	}
	for class, n := range classes {
		if n <= topK {
			t.Errorf("class %s has %d outputs; precision@%d needs more than %d", class, n, topK, topK)
		}
	}

	lastLines := make([]string, len(samples))
	sigs := make([]Signature, len(samples))
	for i, s := range samples {
		lastLines[i] = lastErrorLine(s.Output)
		sigs[i] = normalize(s.Lang, s.Output)
	}
	baseline := precisionAtK(samples, topK, func(q, c int) float64 {
		if lastLines[q] != "" && lastLines[q] == lastLines[c] {
			return 1
		}
		return 0
	})
	signature := precisionAtK(samples, topK, func(q, c int) float64 {
		return Similarity(sigs[q], sigs[c])
	})
	// Kind equality alone shows what the shape and text add on top.
	kindOnly := precisionAtK(samples, topK, func(q, c int) float64 {
		if sigs[q].Kind == sigs[c].Kind {
			return 1
		}
		return 0
	})
	t.Logf("dataset: %d outputs, %d classes", len(samples), len(classes))
	t.Logf("precision@%d kind equality only:             %.3f", topK, kindOnly)
	t.Logf("precision@%d exact last-error-line baseline: %.3f", topK, baseline)
	t.Logf("precision@%d signature similarity:           %.3f", topK, signature)
	if signature < 0.8 {
		t.Errorf("signature precision@%d = %.3f, want >= 0.8", topK, signature)
	}
	if signature <= baseline {
		t.Errorf("signature precision@%d = %.3f, not better than baseline %.3f", topK, signature, baseline)
	}
}

// TestDatasetKinds checks each class maps to one dominant kind and that
// normalizing a signature's own text keeps its kind and shape.
func TestDatasetKinds(t *testing.T) {
	byClass := map[string]map[string]int{}
	for _, s := range loadDataset(t) {
		sig := normalize(s.Lang, s.Output)
		if sig.Kind == KindUnknown || strings.HasSuffix(sig.Kind, ":error") || strings.HasSuffix(sig.Kind, ":unknown") {
			t.Errorf("%s: unrecognized output, kind %q", s.File, sig.Kind)
		}
		if strings.Contains(sig.Text, "/tmp/") || strings.Contains(sig.Shape, "/tmp/") {
			t.Errorf("%s: temp path survived normalization: %q", s.File, sig.Text)
		}
		again := normalize(s.Lang, sig.Text)
		if again.Kind != sig.Kind || again.Shape != sig.Shape {
			t.Errorf("%s: normalizing the text gives %q|%q, want %q", s.File, again.Kind, again.Shape, sig.Key())
		}
		if byClass[s.Class] == nil {
			byClass[s.Class] = map[string]int{}
		}
		byClass[s.Class][sig.Kind]++
	}
	for class, kinds := range byClass {
		if len(kinds) != 1 {
			t.Logf("class %s spans kinds %v", class, kinds)
		}
	}
}

func BenchmarkNormalize(b *testing.B) {
	samples := loadDataset(b)
	size := 0
	for _, s := range samples {
		size += len(s.Output)
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		for _, s := range samples {
			normalize(s.Lang, s.Output)
		}
	}
}

func BenchmarkSimilarity(b *testing.B) {
	samples := loadDataset(b)
	sigs := make([]Signature, len(samples))
	for i, s := range samples {
		sigs[i] = normalize(s.Lang, s.Output)
	}
	b.ReportAllocs()
	for b.Loop() {
		for i := 1; i < len(sigs); i++ {
			Similarity(sigs[0], sigs[i])
		}
	}
}
