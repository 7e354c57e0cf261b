package store

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/autocoder/autocoder/internal/truncate"
)

// ErrInvalidLesson reports a lesson the store refuses to save.
var ErrInvalidLesson = errors.New("invalid lesson")

// Ranking constants, shared by both backends so they order recalls alike.
const (
	// candidateLimit bounds the rows a backend's index hands to rankLessons.
	candidateLimit = 50
	// candidateSimilarity is the least similarity of whole texts a
	// backend's index hands a candidate on for; the gates below decide.
	candidateSimilarity = 0.1
	// minTaskSimilarity and minSigSimilarity are the least similarity a
	// lesson recalled for a task (of topic words) or for a failure (of
	// signatures) has; below it a lesson is noise in a prompt whatever its
	// record. TestRecallEvaluation picked them on labelled sets: the
	// thresholds of the best F1 score (precision and recall weighed alike).
	minTaskSimilarity = 0.25
	minSigSimilarity  = 0.4
	// sigKindBonus multiplies the score of a lesson whose error kind equals
	// the one recalled for: the same exception class is the strongest hint.
	sigKindBonus = 4.0
	// learnMin and learnMax cap the learning factor so that a few outcomes
	// reorder close matches without burying a much better text match.
	learnMin, learnMax = 0.25, 4.0
	// maxCompared caps the bytes of a task and of a signature, stored or
	// recalled for, bounding the cost of comparing long failure output.
	// Capping on the way in lets both backends compare the same text.
	maxCompared = 4096
	// maxQueryTerms caps the trigrams a full-text search looks up.
	maxQueryTerms = 64
)

// Key is the identity SaveLesson upserts by; a lesson's ID is its sha256.
func (l Lesson) Key() string {
	return strings.Join([]string{l.Kind, l.Language, l.SigKind, l.SigShape, l.Fix}, "\x00")
}

func lessonID(l Lesson) string {
	sum := sha256.Sum256([]byte(l.Key()))
	return hex.EncodeToString(sum[:])
}

// prepareLesson validates l and returns what a backend stores: text made
// valid UTF-8 without NUL bytes (Postgres text accepts nothing else, and
// both backends must hash the same key), the id, and fresh timestamps.
func prepareLesson(l Lesson, now time.Time) (Lesson, error) {
	switch l.Kind {
	case LessonFix, LessonFailure, LessonSuccess:
	default:
		return Lesson{}, fmt.Errorf("%w: kind %q", ErrInvalidLesson, l.Kind)
	}
	if l.Recalled < 0 || l.Succeeded < 0 || l.Misled < 0 || l.FailedChecks < 0 {
		return Lesson{}, fmt.Errorf("%w: negative counts", ErrInvalidLesson)
	}
	for _, f := range []*string{&l.Language, &l.SigKind, &l.SigShape, &l.SigText,
		&l.Task, &l.FailedExcerpt, &l.Fix, &l.Reflection} {
		*f = cleanText(*f)
	}
	l.Task = truncate.Head(l.Task, maxCompared)
	l.SigShape, l.SigText = capSig(l.SigShape, l.SigText)
	l.ID = lessonID(l)
	l.CreatedAt = lessonTime(now)
	l.UpdatedAt = l.CreatedAt
	return l, nil
}

func cleanText(s string) string {
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "")
}

// lessonTime is the precision both backends keep: UTC microseconds.
func lessonTime(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// recallQuery is one recall, as every backend and rankLessons see it.
type recallQuery struct {
	language string
	kinds    []string
	bySig    bool    // rank by signature instead of by task
	sigKind  string  // with bySig
	text     string  // the task, or the signature's shape and text
	minSim   float64 // minTaskSimilarity or minSigSimilarity
	k        int
}

func taskQuery(language, task string, k int) recallQuery {
	return recallQuery{language: language, kinds: []string{LessonFix, LessonSuccess},
		text: truncate.Head(task, maxCompared), minSim: minTaskSimilarity, k: k}
}

func sigQuery(language, sigKind, sigShape, sigText string, k int) recallQuery {
	return recallQuery{language: language, kinds: []string{LessonFix}, bySig: true,
		sigKind: sigKind, text: sigJoin(capSig(sigShape, sigText)), minSim: minSigSimilarity, k: k}
}

// sigJoin is the text a signature is compared by; the Postgres trigram
// index is built on the same expression.
func sigJoin(shape, text string) string { return shape + " " + text }

// capSig cuts a signature so that sigJoin of it fits maxCompared.
func capSig(shape, text string) (string, string) {
	shape = truncate.Head(shape, maxCompared-1)
	return shape, truncate.Head(text, maxCompared-1-len(shape))
}

// limit is how many candidates a backend fetches for q.
func (q recallQuery) limit() int { return max(candidateLimit, 4*q.k) }

// textOf is the text of l that q compares.
func (q recallQuery) textOf(l Lesson) string {
	if q.bySig {
		return sigJoin(l.SigShape, l.SigText)
	}
	return topicWords(l.Task)
}

// compared is the query's text as lessons' texts are compared with it.
func (q recallQuery) compared() string {
	if q.bySig {
		return q.text
	}
	return topicWords(q.text)
}

// taskFiller are words that say how a task is put, not what it is about.
// Tasks are mostly written from one template ("Write a Python function
// that …, with pytest tests"), and on the labelled set of
// lessons_eval_test.go the template's words alone made unrelated tasks as
// similar as rephrasings of one task. The language is left out too: recall
// compares lessons of one language only.
var taskFiller = map[string]bool{
	"a": true, "an": true, "the": true, "and": true, "or": true, "that": true, "which": true,
	"to": true, "of": true, "in": true, "for": true, "with": true, "by": true, "on": true,
	"it": true, "its": true, "is": true, "be": true, "as": true, "from": true, "into": true,
	"write": true, "add": true, "create": true, "implement": true, "make": true, "use": true,
	"using": true, "function": true, "functions": true, "program": true, "script": true,
	"code": true, "test": true, "tests": true, "pytest": true, "unittest": true, "table": true,
	"driven": true, "python": true, "go": true, "golang": true,
}

// topicWords is s without taskFiller words: what a task is about.
func topicWords(s string) string {
	ws := words(s)
	out := ws[:0]
	for _, w := range ws {
		if !taskFiller[w] {
			out = append(out, w)
		}
	}
	return strings.Join(out, " ")
}

// rankLessons scores the candidates for q with lessonScore and returns the
// best q.k. Equal scores fall back to the most recently updated, then the
// smaller id, so the order is total.
func rankLessons(q recallQuery, candidates []Lesson) []ScoredLesson {
	want := trigrams(q.compared())
	out := make([]ScoredLesson, 0, len(candidates))
	for _, l := range candidates {
		score := lessonScore(want, q.textOf(l), l.Succeeded, l.setbacks(), q.bySig && l.SigKind == q.sigKind, q.minSim)
		if score > 0 {
			out = append(out, ScoredLesson{Lesson: l, Score: score})
		}
	}
	slices.SortFunc(out, func(a, b ScoredLesson) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		if c := b.UpdatedAt.Compare(a.UpdatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out[:min(len(out), max(q.k, 0))]
}

// lessonScore is trigram similarity × learning factor × kind bonus, or 0
// for a lesson gatedScore does not recall. want is the query's trigrams.
func lessonScore(want []uint64, text string, succeeded, setbacks int, kindMatch bool, minSim float64) float64 {
	return gatedScore(similarity(want, trigrams(text)), learning(succeeded, setbacks), kindMatch, minSim)
}

// gatedScore is sim × learn × kind bonus, or 0 when sim, lowered by a
// learning factor under 1, is below minSim. A record of help reorders
// related lessons but never lifts an unrelated one over the bar: a lesson
// credited for every task it was recalled into would otherwise be recalled
// into every task. A record of failures does sink a lesson below it.
func gatedScore(sim, learn float64, kindMatch bool, minSim float64) float64 {
	if sim*min(learn, 1) < minSim {
		return 0
	}
	score := sim * learn
	if kindMatch {
		score *= sigKindBonus
	}
	return score
}

// learning is (succeeded+1)/(setbacks+1), capped: lessons that helped
// before rise, lessons that were followed by failures sink, and unused
// ones stay at 1.
func learning(succeeded, setbacks int) float64 {
	return min(max(float64(succeeded+1)/float64(setbacks+1), learnMin), learnMax)
}

// setbacks are the failures that followed the lesson's recalls: tasks that
// failed and checks that failed; the SQL of both backends adds the same.
func (l Lesson) setbacks() int { return l.Misled + l.FailedChecks }

// trigrams returns the sorted, distinct trigrams of s the way pg_trgm
// makes them: lowercased alphanumeric words, each padded with two spaces in
// front and one behind. Each trigram packs three 21-bit runes. It runs once
// per candidate row, so it makes one pass and one allocation.
func trigrams(s string) []uint64 {
	out := make([]uint64, 0, len(s)+len(s)/2)
	var window uint64 // the last runes, packed; masked to the last three
	inWord := false
	endWord := func() {
		if inWord {
			out = append(out, (window<<21|' ')&trigramMask)
			inWord = false
		}
	}
	for _, r := range s {
		if !isWordRune(r) {
			endWord()
			continue
		}
		if !inWord {
			window, inWord = ' '<<21|' ', true
		}
		window = window<<21 | uint64(unicode.ToLower(r))
		out = append(out, window&trigramMask)
	}
	endWord()
	slices.Sort(out)
	return slices.Compact(out)
}

const trigramMask = 1<<63 - 1

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// similarity is the Jaccard index of two sorted trigram sets, the measure
// pg_trgm's similarity() computes.
func similarity(a, b []uint64) float64 {
	shared := 0
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch {
		case a[i] < b[j]:
			i++
		case a[i] > b[j]:
			j++
		default:
			shared++
			i++
			j++
		}
	}
	union := len(a) + len(b) - shared
	if union == 0 {
		return 0
	}
	return float64(shared) / float64(union)
}

// words splits s into lowercased runs of letters and digits.
func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !isWordRune(r) })
}

// queryTrigrams returns up to maxQueryTerms distinct three-rune substrings
// of the words of s, in order: the terms a trigram full-text index holds.
func queryTrigrams(s string) []string {
	var grams []string
	for _, w := range words(s) {
		r := []rune(w)
		for i := 0; i+3 <= len(r); i++ {
			grams = append(grams, string(r[i:i+3]))
		}
	}
	return firstDistinct(grams)
}

func firstDistinct(terms []string) []string {
	seen := make(map[string]bool, len(terms))
	out := make([]string, 0, min(len(terms), maxQueryTerms))
	for _, t := range terms {
		if len(out) == maxQueryTerms {
			break
		}
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}

// lessonColumns lists, qualified by alias when one is given, the columns
// scanLessons reads, in its order.
func lessonColumns(alias string) string {
	cols := []string{"id", "kind", "language", "sig_kind", "sig_shape", "sig_text", "task",
		"failed_excerpt", "fix", "reflection", "recalled", "succeeded", "misled", "failed_checks", "created_at", "updated_at"}
	if alias != "" {
		for i, c := range cols {
			cols[i] = alias + "." + c
		}
	}
	return strings.Join(cols, ", ")
}

// scanLessons reads lessonColumns rows. timeDest adapts a time field to
// the backend's scan destination.
func scanLessons(rs rows, timeDest func(*time.Time) any) ([]Lesson, error) {
	var out []Lesson
	for rs.Next() {
		var l Lesson
		if err := rs.Scan(&l.ID, &l.Kind, &l.Language, &l.SigKind, &l.SigShape, &l.SigText, &l.Task,
			&l.FailedExcerpt, &l.Fix, &l.Reflection, &l.Recalled, &l.Succeeded, &l.Misled, &l.FailedChecks,
			timeDest(&l.CreatedAt), timeDest(&l.UpdatedAt)); err != nil {
			return nil, err
		}
		l.CreatedAt, l.UpdatedAt = l.CreatedAt.UTC(), l.UpdatedAt.UTC()
		out = append(out, l)
	}
	return out, rs.Err()
}

// oneLesson finishes a lookup by id: no row is ErrNotFound.
func oneLesson(id string, ls []Lesson, err error) (Lesson, error) {
	if err != nil {
		return Lesson{}, fmt.Errorf("get lesson %s: %w", id, err)
	}
	if len(ls) == 0 {
		return Lesson{}, fmt.Errorf("get lesson %s: %w", id, ErrNotFound)
	}
	return ls[0], nil
}

// distinctRecalls sorts recalls by id and keeps one per lesson, with the
// most failed checks: each lesson counts once per task, and rows are
// locked in one order so concurrent markers cannot deadlock.
func distinctRecalls(recalls []Recall) []Recall {
	out := slices.Clone(recalls)
	slices.SortFunc(out, func(a, b Recall) int {
		return cmp.Or(strings.Compare(a.ID, b.ID), cmp.Compare(b.FailedChecks, a.FailedChecks))
	})
	return slices.CompactFunc(out, func(a, b Recall) bool { return a.ID == b.ID })
}

// outcome is what MarkRecalled adds to succeeded and to misled.
func outcome(succeeded bool) (won, lost int) {
	if succeeded {
		return 1, 0
	}
	return 0, 1
}

// forgotten finishes a delete by id: no row deleted is ErrNotFound.
func forgotten(id string, deleted int64, err error) error {
	if err == nil && deleted == 0 {
		err = ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("forget lesson %s: %w", id, err)
	}
	return nil
}
