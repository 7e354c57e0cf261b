package store

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"github.com/autocoder/autocoder/internal/lang/languages"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/signature"
)

// The recall evaluation: labelled sets of stored lessons and of tasks and
// failures recalled for, each naming the lessons that would help it. Tasks
// come from testdata/recall_tasks.json; failures are the real toolchain
// outputs of internal/signature's dataset, a fix lesson being relevant to a
// failure of the same bug class. The test prints precision and recall of
// the old gate and of the current one over a sweep of thresholds, and
// fails when the store's own recall, on every backend, falls below the
// floors the sweep justified.

const (
	evalK = 3 // what activities recall per prompt
	// The floors of what RecallByTask and RecallBySignature return on the
	// labelled sets. The gate before them (whole task texts, similarity
	// 0.10, a score of 0.20 that a record of help lifted) scored precision
	// 0.26 and recall 0.88 on tasks, recalling something into every
	// unrelated one, and 0.68 and 1.00 on failures; the chosen thresholds
	// score 0.91 and 0.91, and 0.84 and 0.94.
	evalTaskPrecisionFloor = 0.88
	evalTaskRecallFloor    = 0.88
	evalSigPrecisionFloor  = 0.80
	evalSigRecallFloor     = 0.90
)

type evalLesson struct {
	Name     string `json:"name"`
	Kind     string `json:"kind"`
	Language string `json:"language"`
	Task     string `json:"task"`
	Helped   int    `json:"helped"`
	Misled   int    `json:"misled"`
	// For failure lessons: the signature the lesson was saved with.
	sig signature.Signature
}

type evalQuery struct {
	Language string               `json:"language"`
	Task     string               `json:"task"`
	Relevant []string             `json:"relevant"`
	sig      *signature.Signature // set for a failure query
}

type evalSet struct {
	lessons []evalLesson
	queries []evalQuery
}

func loadTaskSet(t *testing.T) evalSet {
	t.Helper()
	raw, err := os.ReadFile("testdata/recall_tasks.json")
	if err != nil {
		t.Fatalf("read task set: %v", err)
	}
	var f struct {
		Lessons []evalLesson `json:"lessons"`
		Queries []evalQuery  `json:"queries"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatalf("decode task set: %v", err)
	}
	return evalSet{lessons: f.Lessons, queries: f.Queries}
}

// loadFailureSet splits the signature dataset: every other output of a
// bug class, in name order, is a stored fix lesson, the rest are failures
// recalled for. A class's other lessons of the same language are the
// relevant ones.
func loadFailureSet(t *testing.T) evalSet {
	t.Helper()
	const dir = "../signature/testdata/errors"
	raw, err := os.ReadFile(filepath.Join(dir, "labels.json"))
	if err != nil {
		t.Fatalf("read failure labels: %v", err)
	}
	var labels map[string]string
	if err := json.Unmarshal(raw, &labels); err != nil {
		t.Fatalf("decode failure labels: %v", err)
	}
	files := make([]string, 0, len(labels))
	for f := range labels {
		files = append(files, f)
	}
	sort.Strings(files)
	type sample struct{ file, lang, class string }
	var stored, asked []sample
	seen := map[string]int{}
	for _, f := range files {
		lang := "python"
		if strings.HasPrefix(f, "go_") {
			lang = "go"
		}
		s := sample{f, lang, labels[f]}
		key := lang + "/" + s.class
		if seen[key]%2 == 0 {
			stored = append(stored, s)
		} else {
			asked = append(asked, s)
		}
		seen[key]++
	}
	sigOf := func(s sample) signature.Signature {
		out, err := os.ReadFile(filepath.Join(dir, s.file))
		if err != nil {
			t.Fatalf("read failure output: %v", err)
		}
		return signature.Normalize(languages.MustLookup(s.lang), string(out))
	}
	var set evalSet
	for _, s := range stored {
		set.lessons = append(set.lessons, evalLesson{Name: s.file, Kind: LessonFix, Language: s.lang,
			Task: "fix " + s.file, sig: sigOf(s)})
	}
	for _, q := range asked {
		var relevant []string
		for _, s := range stored {
			if s.lang == q.lang && s.class == q.class {
				relevant = append(relevant, s.file)
			}
		}
		sig := sigOf(q)
		set.queries = append(set.queries, evalQuery{Language: q.lang, Task: q.file, Relevant: relevant, sig: &sig})
	}
	return set
}

func (l evalLesson) lesson() Lesson {
	return Lesson{Kind: l.Kind, Language: l.Language, Task: l.Task, Fix: "fix of " + l.Name,
		SigKind: l.sig.Kind, SigShape: l.sig.Shape, SigText: l.sig.Text,
		Succeeded: l.Helped, Recalled: l.Helped + l.Misled, Misled: l.Misled}
}

// query is the store's query for q.
func (q evalQuery) query() recallQuery {
	if q.sig != nil {
		return sigQuery(q.Language, q.sig.Kind, q.sig.Shape, q.sig.Text, evalK)
	}
	return taskQuery(q.Language, q.Task, evalK)
}

// metrics are micro-averaged over the queries: precision is the share of
// recalled lessons that were relevant; recall the share of relevant
// lessons recalled, counting at most evalK per query; noise the share of
// queries with nothing relevant that got something.
type metrics struct{ precision, recall, noise float64 }

func (m metrics) String() string {
	return fmt.Sprintf("precision %.2f recall %.2f noise %.2f", m.precision, m.recall, m.noise)
}

// evaluate scores what recall returns for each query by the set's labels.
func evaluate(set evalSet, recall func(evalQuery) []string) metrics {
	var got, hit, want, unrelated, noisy int
	for _, q := range set.queries {
		names := recall(q)
		got += len(names)
		want += min(len(q.Relevant), evalK)
		for _, n := range names {
			if slices.Contains(q.Relevant, n) {
				hit++
			}
		}
		if len(q.Relevant) == 0 {
			unrelated++
			if len(names) > 0 {
				noisy++
			}
		}
	}
	m := metrics{precision: 1, recall: 1}
	if got > 0 {
		m.precision = float64(hit) / float64(got)
	}
	if want > 0 {
		m.recall = float64(hit) / float64(want)
	}
	if unrelated > 0 {
		m.noise = float64(noisy) / float64(unrelated)
	}
	return m
}

// ranked recalls by score over the whole set, best evalK first, without a
// store: score says what each lesson scores for q, 0 meaning not recalled.
func ranked(set evalSet, score func(q evalQuery, l evalLesson) float64) func(evalQuery) []string {
	return func(q evalQuery) []string {
		type scored struct {
			name  string
			score float64
		}
		var out []scored
		rq := q.query()
		for _, l := range set.lessons {
			if l.Language != q.Language || !slices.Contains(rq.kinds, l.Kind) {
				continue
			}
			if s := score(q, l); s > 0 {
				out = append(out, scored{l.Name, s})
			}
		}
		slices.SortStableFunc(out, func(a, b scored) int { return cmp.Compare(b.score, a.score) })
		names := make([]string, 0, evalK)
		for _, s := range out[:min(len(out), evalK)] {
			names = append(names, s.name)
		}
		return names
	}
}

// oldScore is the gate recall had before the evaluation: similarity 0.1 in
// the store, then a score of 0.2 in activities, the score counting a
// lesson's record, so that help lifted unrelated lessons over it.
func oldScore(sim, learn float64, kindMatch bool) float64 {
	if sim < 0.1 {
		return 0
	}
	score := sim * learn
	if kindMatch {
		score *= sigKindBonus
	}
	if score < 0.2 {
		return 0
	}
	return score
}

// evalSimilarity is what the store compares for q and l; with whole set,
// the whole task texts, as the store compared them before.
func evalSimilarity(q evalQuery, l evalLesson, whole bool) (sim, learn float64, kindMatch bool) {
	rq, ll := q.query(), l.lesson()
	a, b := rq.compared(), rq.textOf(ll)
	if whole && !rq.bySig {
		a, b = rq.text, ll.Task
	}
	return similarity(trigrams(a), trigrams(b)), learning(l.Helped, l.Misled), rq.bySig && l.sig.Kind == rq.sigKind
}

func TestRecallEvaluation(t *testing.T) {
	sets := []struct {
		name                string
		set                 evalSet
		precision, recallAt float64
	}{
		{"tasks", loadTaskSet(t), evalTaskPrecisionFloor, evalTaskRecallFloor},
		{"failures", loadFailureSet(t), evalSigPrecisionFloor, evalSigRecallFloor},
	}
	for _, s := range sets {
		unrelated := 0
		for _, q := range s.set.queries {
			if len(q.Relevant) == 0 {
				unrelated++
			}
		}
		if len(s.set.queries) < 30 || len(s.set.lessons) < 20 {
			t.Fatalf("%s set too small: %d queries over %d lessons", s.name, len(s.set.queries), len(s.set.lessons))
		}
		t.Logf("%s: %d queries (%d with no relevant lesson) over %d lessons, top %d",
			s.name, len(s.set.queries), unrelated, len(s.set.lessons), evalK)
		old := evaluate(s.set, ranked(s.set, func(q evalQuery, l evalLesson) float64 {
			return oldScore(evalSimilarity(q, l, true))
		}))
		t.Logf("  before (whole texts, similarity 0.10, score 0.20): %v", old)
		for _, th := range []float64{0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5} {
			m := evaluate(s.set, ranked(s.set, func(q evalQuery, l evalLesson) float64 {
				sim, learn, kind := evalSimilarity(q, l, false)
				return gatedScore(sim, learn, kind, th)
			}))
			mark := ""
			if th == s.set.queries[0].query().minSim {
				mark = "  <- chosen"
			}
			t.Logf("  similarity %.2f: %v%s", th, m, mark)
		}
	}
	forEachBackend(t, func(t *testing.T, open func(*testing.T) (Store, Store)) {
		ctx := context.Background()
		for _, s := range sets {
			st, _ := open(t)
			byID := map[string]string{}
			for _, l := range s.set.lessons {
				byID[mustSave(t, st, l.lesson())] = l.Name
			}
			m := evaluate(s.set, func(q evalQuery) []string {
				var got []ScoredLesson
				var err error
				if q.sig != nil {
					got, err = st.RecallBySignature(ctx, q.Language, q.sig.Kind, q.sig.Shape, q.sig.Text, evalK)
				} else {
					got, err = st.RecallByTask(ctx, q.Language, q.Task, evalK)
				}
				if err != nil {
					t.Fatalf("recall for %q: %v", q.Task, err)
				}
				var names []string
				for _, l := range got {
					names = append(names, byID[l.ID])
				}
				return names
			})
			t.Logf("%s recalled by the store: %v", s.name, m)
			if m.precision < s.precision || m.recall < s.recallAt {
				t.Errorf("%s: %v; want precision >= %.2f and recall >= %.2f", s.name, m, s.precision, s.recallAt)
			}
		}
	})
}
