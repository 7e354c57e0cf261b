package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// Vocabulary for generated lessons: enough variety that recall has to
// pick, and enough overlap that many lessons are candidates.
var (
	genVerbs   = []string{"add", "fix", "refactor", "test", "parse", "validate", "cache", "retry", "stream", "serialize", "log", "rename"}
	genObjects = []string{"http client", "csv reader", "config loader", "database pool", "json encoder", "user table",
		"rate limiter", "file watcher", "auth token", "grpc server", "template renderer", "job queue"}
	genDetails = []string{"with exponential backoff", "for large inputs", "without allocations", "behind a feature flag",
		"with context cancellation", "in parallel", "across restarts", "for unicode names", "under load", "with metrics"}
	genLanguages = []string{"go", "python", "typescript"}
	genSigKinds  = map[string][]string{
		"go":         {"go:panic", "go:test", "go:build", "go:race"},
		"python":     {"python:AssertionError", "python:TypeError", "python:KeyError", "python:ImportError"},
		"typescript": {"ts:TS2322", "ts:TS2345", "ts:jest", "ts:TypeError"},
	}
	genShapes = []string{"expected N got N", "index out of range [N] with length N", "cannot use X as Y",
		"undefined: X", "assert N == N", "X object is not subscriptable", "no module named X",
		"data race on X", "argument of type X is not assignable", "timeout after Ns"}
	genIdents = []string{"total", "parseRow", "userID", "retryCount", "cfg.Port", "encodeJSON", "tokenTTL", "queue.Push",
		"watcher.Add", "limiter.Wait", "render", "pool.Get"}
)

// genLesson builds a plausible lesson from r.
func genLesson(r *rand.Rand) Lesson {
	pick := func(xs []string) string { return xs[r.IntN(len(xs))] }
	lang := pick(genLanguages)
	ident := pick(genIdents)
	l := Lesson{
		Kind:     LessonFix,
		Language: lang,
		SigKind:  pick(genSigKinds[lang]),
		SigShape: pick(genShapes),
		SigText: fmt.Sprintf("%s_test.go:%d: %s(%d) returned %d\n    at %s", ident, r.IntN(400),
			ident, r.IntN(100), r.IntN(100), pick(genIdents)),
		Task:          fmt.Sprintf("%s the %s %s", pick(genVerbs), pick(genObjects), pick(genDetails)),
		FailedExcerpt: "--- FAIL: Test" + ident,
		Fix:           fmt.Sprintf("-\t%s(x)\n+\t%s(x, %d)", ident, ident, r.IntN(1000)),
		Reflection:    "the " + ident + " call lacked an argument",
	}
	switch n := r.IntN(10); {
	case n < 2:
		l.Kind, l.SigKind, l.SigShape, l.SigText = LessonSuccess, "", "", ""
	case n < 3:
		l.Kind = LessonFailure
	}
	return l
}

// benchLessons returns n generated lessons, the same on every call.
func benchLessons(n int) []Lesson {
	r := rand.New(rand.NewPCG(1, 2))
	out := make([]Lesson, n)
	for i := range out {
		out[i] = genLesson(r)
	}
	return out
}

// benchQueries returns n fix-shaped lessons to recall for, drawn apart
// from benchLessons.
func benchQueries(n int) []Lesson {
	r := rand.New(rand.NewPCG(3, 4))
	var out []Lesson
	for len(out) < n {
		if l := genLesson(r); l.Kind == LessonFix {
			out = append(out, l)
		}
	}
	return out
}

// BenchmarkLessonRecall recalls the top 5 from 10,000 lessons.
func BenchmarkLessonRecall(b *testing.B) {
	const lessons, k = 10_000, 5
	ctx := context.Background()
	queries := benchQueries(100)
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			s := openTarget(b, be.target(b))
			start := time.Now()
			for i, l := range benchLessons(lessons) {
				id := mustSave(b, s, l)
				if i%5 == 0 {
					if err := s.MarkRecalled(ctx, recalls(id), i%3 != 0); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.Logf("saved %d lessons in %v", lessons, time.Since(start).Round(time.Millisecond))
			b.Run("task", func(b *testing.B) {
				for i := 0; b.Loop(); i++ {
					q := queries[i%len(queries)]
					if got := recallTask(b, s, q.Language, q.Task, k); len(got) == 0 {
						b.Fatalf("nothing recalled for %q", q.Task)
					}
				}
			})
			b.Run("signature", func(b *testing.B) {
				for i := 0; b.Loop(); i++ {
					q := queries[i%len(queries)]
					got, err := s.RecallBySignature(ctx, q.Language, q.SigKind, q.SigShape, q.SigText, k)
					if err != nil || len(got) == 0 {
						b.Fatalf("recall %q: %d lessons, %v", q.SigShape, len(got), err)
					}
				}
			})
		})
	}
}
