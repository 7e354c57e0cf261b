package store

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func TestLessonContract(t *testing.T) { forEachBackend(t, RunLessonContract) }

// RunLessonContract checks the lesson behaviour every Store must share.
// open returns two stores on one fresh, empty database, as two workers
// would hold.
func RunLessonContract(t *testing.T, open func(t *testing.T) (Store, Store)) {
	ctx := context.Background()
	one := func(t *testing.T) Store {
		s, _ := open(t)
		return s
	}

	t.Run("upsert is idempotent", func(t *testing.T) {
		s := one(t)
		l := fixLesson("go", "go:panic", "index out of range [N] with length N", "nil slice", "sum a list of numbers", "check len")
		l.Reflection = "the slice was empty"
		id := mustSave(t, s, l)
		sum := sha256.Sum256([]byte("fix\x00go\x00go:panic\x00index out of range [N] with length N\x00check len"))
		if want := hex.EncodeToString(sum[:]); id != want {
			t.Fatalf("id %s, want sha256 of the key %s", id, want)
		}
		first := mustGet(t, s, id)
		if err := s.MarkRecalled(ctx, recalls(id), true); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond) // so a new UpdatedAt is visibly later

		again := l
		again.Task = "a different task that hit the same fix"
		again.Recalled, again.Succeeded, again.FailedChecks = 40, 40, 40
		if id2 := mustSave(t, s, again); id2 != id {
			t.Fatalf("re-save gave id %s, want %s", id2, id)
		}
		got := mustGet(t, s, id)
		if got.Task != l.Task || got.Reflection != l.Reflection {
			t.Errorf("re-save changed the content: task %q reflection %q", got.Task, got.Reflection)
		}
		if got.Recalled != 1 || got.Succeeded != 1 || got.Misled != 0 || got.FailedChecks != 0 {
			t.Errorf("re-save changed the counts to %d/%d/%d/%d, want 1/1/0/0", got.Recalled, got.Succeeded, got.Misled, got.FailedChecks)
		}
		if !got.CreatedAt.Equal(first.CreatedAt) || !got.UpdatedAt.After(first.UpdatedAt) {
			t.Errorf("times created %v updated %v, want created %v and updated after %v",
				got.CreatedAt, got.UpdatedAt, first.CreatedAt, first.UpdatedAt)
		}
		if all := mustList(t, s, "", 0); len(all) != 1 {
			t.Fatalf("%d lessons after two saves of one, want 1", len(all))
		}
	})

	t.Run("content is stored whole", func(t *testing.T) {
		s := one(t)
		l := Lesson{Kind: LessonFix, Language: "python", SigKind: "python:UnicodeDecodeError",
			SigShape: "can't decode byte 0xNN", SigText: "bad \xff byte and a nul\x00 here",
			Task: "read a latin-1 file", FailedExcerpt: "Traceback…\n  line 3", Fix: "-open(p)\n+open(p, encoding='latin-1')",
			Reflection: "wrong codec", Recalled: 3, Succeeded: 2, Misled: 1, FailedChecks: 4}
		id := mustSave(t, s, l)
		got := mustGet(t, s, id)
		want := l
		want.ID, want.SigText = id, "bad \uFFFD byte and a nul here"
		want.CreatedAt, want.UpdatedAt = got.CreatedAt, got.UpdatedAt
		if got != want {
			t.Fatalf("got  %+v\nwant %+v", got, want)
		}
		if got.CreatedAt.Location() != time.UTC || time.Since(got.CreatedAt) > time.Minute {
			t.Errorf("created at %v, want a recent UTC time", got.CreatedAt)
		}
	})

	t.Run("long text is capped and still recalled", func(t *testing.T) {
		s := one(t)
		long := strings.Repeat("ValueError: bad literal for int() with base 10 ", 400)
		l := fixLesson("python", "python:ValueError", "invalid literal for int() with base N: X", long, long, "strip()")
		got := mustGet(t, s, mustSave(t, s, l))
		if n := len(got.SigShape) + 1 + len(got.SigText); n > maxCompared || len(got.Task) > maxCompared || got.Task != long[:len(got.Task)] {
			t.Fatalf("stored a %d-byte signature and a %d-byte task, want at most %d", n, len(got.Task), maxCompared)
		}
		bySig, err := s.RecallBySignature(ctx, "python", l.SigKind, l.SigShape, long, 1)
		if err != nil || len(bySig) != 1 || bySig[0].Score != sigKindBonus {
			t.Errorf("signature recall %v, %v; want the lesson scoring %v", scores(bySig), err, sigKindBonus)
		}
		if byTask := recallTask(t, s, "python", long, 1); len(byTask) != 1 || byTask[0].Score != 1 {
			t.Errorf("task recall %v, want the lesson scoring 1", scores(byTask))
		}
	})

	t.Run("invalid lessons", func(t *testing.T) {
		s := one(t)
		for _, l := range []Lesson{
			{Kind: "hint", Language: "go"},
			{Kind: LessonFix, Language: "go", Misled: -1},
		} {
			if _, err := s.SaveLesson(ctx, l); !errors.Is(err, ErrInvalidLesson) {
				t.Errorf("SaveLesson(%+v) = %v, want ErrInvalidLesson", l, err)
			}
		}
	})

	t.Run("recall by task, most similar first", func(t *testing.T) {
		s := one(t)
		backoff := mustSave(t, s, successLesson("go", "add retry with exponential backoff to the http client", "1. wrap Do"))
		dbRetry := mustSave(t, s, successLesson("go", "add retry to the database connection", "1. loop Ping"))
		mustSave(t, s, successLesson("go", "parse csv files into structs", "1. encoding/csv"))
		fix := mustSave(t, s, fixLesson("go", "go:test", "expected N got N", "", "exponential backoff for http client retries", "sleep longer"))

		// A retry of something else shares the words of how a task is put
		// but not its topic: it is not recalled.
		got := recallTask(t, s, "go", "add exponential backoff retry to the http client", 10)
		if want := []string{backoff, fix}; !slices.Equal(ids(got), want) {
			t.Fatalf("order %v, want %v (not %s)", names(got, want), want, dbRetry)
		}
		if !descending(got) {
			t.Errorf("scores not descending: %v", scores(got))
		}
		if top := recallTask(t, s, "go", "add retry with exponential backoff to the http client", 1); len(top) != 1 || top[0].ID != backoff || top[0].Score != 1 {
			t.Errorf("the same task: %+v, want only %s scoring 1", scores(top), backoff)
		}
		if none := recallTask(t, s, "go", "quantum chromodynamics lattice", 10); len(none) != 0 {
			t.Errorf("an unrelated task recalled %d lessons", len(none))
		}
	})

	t.Run("recall by signature prefers the same kind, then a similar shape", func(t *testing.T) {
		s := one(t)
		const kind = "python:AssertionError"
		shape, text := "assert N == N", "test_total: assert total(items) == 10"
		sameKindClose := mustSave(t, s, fixLesson("python", kind, "assert N == N", "test_sum: assert total(cart) == 10", "cart totals", "round"))
		otherKindExact := mustSave(t, s, fixLesson("python", "python:TypeError", shape, text, "cart totals", "cast"))
		sameKindFar := mustSave(t, s, fixLesson("python", kind, "assert 'x' in names", "test_users: missing user", "user list", "append"))
		mustSave(t, s, fixLesson("python", "python:KeyError", "KeyError: 'id'", "row['id']", "rows", "get"))

		got, err := s.RecallBySignature(ctx, "python", kind, shape, text, 3)
		if err != nil {
			t.Fatal(err)
		}
		// The kind outweighs the text: an exact shape of another kind comes
		// after a close one of the same kind. A failure of the same kind
		// but another shape is not similar enough to be recalled at all.
		if want := []string{sameKindClose, otherKindExact}; !slices.Equal(ids(got), want) {
			t.Fatalf("order %v, want %v (not %s)", names(got, want), want, sameKindFar)
		}
	})

	t.Run("language filter", func(t *testing.T) {
		s := one(t)
		task := "read a config file and validate the port"
		goID := mustSave(t, s, successLesson("go", task, "os.ReadFile"))
		pyID := mustSave(t, s, successLesson("python", task, "open()"))
		goFix := mustSave(t, s, fixLesson("go", "go:build", "undefined: X", "undefined: Config", task, "import"))
		mustSave(t, s, fixLesson("python", "go:build", "undefined: X", "undefined: Config", task, "import"))
		if got := recallTask(t, s, "go", task, 10); !sameSet(ids(got), []string{goID, goFix}) {
			t.Errorf("go recall %v, want %s and %s", ids(got), goID, goFix)
		}
		if got := recallTask(t, s, "python", task, 10); len(got) != 2 || !slices.Contains(ids(got), pyID) {
			t.Errorf("python recall %v, want 2 lessons with %s", ids(got), pyID)
		}
		got, err := s.RecallBySignature(ctx, "go", "go:build", "undefined: X", "undefined: Config", 10)
		if err != nil || !slices.Equal(ids(got), []string{goFix}) {
			t.Errorf("go signature recall %v, %v; want only %s", ids(got), err, goFix)
		}
	})

	t.Run("failures are never recalled", func(t *testing.T) {
		s := one(t)
		task := "migrate the users table to uuid keys"
		failure := fixLesson("go", "go:test", "pq: column does not exist", "column id_uuid does not exist", task, "")
		failure.Kind = LessonFailure
		mustSave(t, s, failure)
		success := mustSave(t, s, successLesson("go", task, "1. add column"))
		if got := recallTask(t, s, "go", task, 10); !slices.Equal(ids(got), []string{success}) {
			t.Errorf("task recall %v, want only the success %s", ids(got), success)
		}
		got, err := s.RecallBySignature(ctx, "go", failure.SigKind, failure.SigShape, failure.SigText, 10)
		if err != nil || len(got) != 0 {
			t.Errorf("signature recall %v, %v; want neither the failure nor the success", ids(got), err)
		}
	})

	t.Run("ranking learns from outcomes", func(t *testing.T) {
		s := one(t)
		task := "render markdown tables as html"
		helped := mustSave(t, s, successLesson("go", task, "1. goldmark with tables"))
		time.Sleep(2 * time.Millisecond)
		misled := mustSave(t, s, successLesson("go", task, "1. hand-written parser"))
		// Equal similarity: the newer lesson leads until outcomes count.
		if got := recallTask(t, s, "go", task, 2); !slices.Equal(ids(got), []string{misled, helped}) || got[0].Score != got[1].Score {
			t.Fatalf("before outcomes: %v scoring %v, want %s then %s, tied", ids(got), scores(got), misled, helped)
		}
		for range 2 {
			if err := s.MarkRecalled(ctx, recalls(helped), true); err != nil {
				t.Fatal(err)
			}
			if err := s.MarkRecalled(ctx, recalls(misled), false); err != nil {
				t.Fatal(err)
			}
		}
		got := recallTask(t, s, "go", task, 2)
		if !slices.Equal(ids(got), []string{helped, misled}) {
			t.Fatalf("after outcomes: %v, want %s then %s", ids(got), helped, misled)
		}
		if got[0].Score != 3 || got[1].Score != 1.0/3 {
			t.Errorf("scores %v, want 3 and 1/3 from the learning factor", scores(got))
		}
	})

	t.Run("checks that failed after a recall sink a lesson", func(t *testing.T) {
		s := one(t)
		task := "cache rendered pages in redis"
		followed := mustSave(t, s, successLesson("go", task, "1. go-redis with a TTL"))
		time.Sleep(2 * time.Millisecond)
		clean := mustSave(t, s, successLesson("go", task, "1. an LRU in memory"))
		// Both tasks passed at last, but after one recall three checks
		// failed; the same lesson twice in one call counts once.
		if err := s.MarkRecalled(ctx, []Recall{{ID: followed, FailedChecks: 1}, {ID: clean}, {ID: followed, FailedChecks: 3}}, true); err != nil {
			t.Fatal(err)
		}
		got := recallTask(t, s, "go", task, 2)
		if !slices.Equal(ids(got), []string{clean, followed}) || got[0].Score != 2 || got[1].Score != 0.5 {
			t.Fatalf("recall %v scoring %v, want %s scoring 2 (helped once) then %s scoring 0.5 (helped once, 3 failed checks)",
				ids(got), scores(got), clean, followed)
		}
		if l := mustGet(t, s, followed); l.Recalled != 1 || l.Succeeded != 1 || l.Misled != 0 || l.FailedChecks != 3 {
			t.Errorf("counts %d/%d/%d/%d, want recalled 1, succeeded 1, misled 0, 3 failed checks", l.Recalled, l.Succeeded, l.Misled, l.FailedChecks)
		}
		// A later task recalling it fails four more checks, then fails: the
		// lesson's weight falls to its floor, and a task put in other words
		// recalls it no more.
		rephrased := "cache the rendered pages in redis with a TTL"
		if got := recallTask(t, s, "go", rephrased, 2); !slices.Equal(ids(got), []string{clean, followed}) {
			t.Fatalf("rephrased recall %v scoring %v, want %s then %s", ids(got), scores(got), clean, followed)
		}
		if err := s.MarkRecalled(ctx, []Recall{{ID: followed, FailedChecks: 4}}, false); err != nil {
			t.Fatal(err)
		}
		if l := mustGet(t, s, followed); l.FailedChecks != 7 || l.Misled != 1 {
			t.Errorf("after a second task: %d failed checks, misled %d; want 7 and 1", l.FailedChecks, l.Misled)
		}
		if got := recallTask(t, s, "go", rephrased, 2); !slices.Equal(ids(got), []string{clean}) {
			t.Errorf("rephrased recall %v scoring %v, want only %s", ids(got), scores(got), clean)
		}
	})

	t.Run("a record of help lifts no unrelated lesson; failures sink one", func(t *testing.T) {
		s := one(t)
		add := mustSave(t, s, successLesson("python", "Write a Python function that adds two numbers, with pytest tests", "1. def add"))
		for range 6 {
			if err := s.MarkRecalled(ctx, recalls(add), true); err != nil {
				t.Fatal(err)
			}
		}
		if got := recallTask(t, s, "python", "Write a Python function that counts the vowels in a string, with pytest tests", 3); len(got) != 0 {
			t.Errorf("an unrelated task recalled %v scoring %v; helped 6 times, the lesson still shares only the template", ids(got), scores(got))
		}
		task := "Resize every PNG image in a folder with Pillow"
		resize := mustSave(t, s, successLesson("python", task, "1. Image.thumbnail"))
		query := "Resize the PNG images of a folder to 256 pixels with Pillow"
		if got := recallTask(t, s, "python", query, 3); !slices.Equal(ids(got), []string{resize}) {
			t.Fatalf("a rephrased task recalled %v, want %s", ids(got), resize)
		}
		for range 3 {
			if err := s.MarkRecalled(ctx, recalls(resize), false); err != nil {
				t.Fatal(err)
			}
		}
		if got := recallTask(t, s, "python", query, 3); len(got) != 0 {
			t.Errorf("a lesson that misled 3 times recalled for a rephrased task: %v scoring %v", ids(got), scores(got))
		}
	})

	t.Run("forget", func(t *testing.T) {
		s := one(t)
		task := "compress log files older than a week"
		keep := mustSave(t, s, successLesson("go", task, "1. gzip"))
		gone := mustSave(t, s, successLesson("go", task, "1. zstd"))
		if err := s.ForgetLesson(ctx, gone); err != nil {
			t.Fatal(err)
		}
		if _, err := s.GetLesson(ctx, gone); !errors.Is(err, ErrNotFound) {
			t.Errorf("GetLesson after forget: %v, want ErrNotFound", err)
		}
		if err := s.ForgetLesson(ctx, gone); !errors.Is(err, ErrNotFound) {
			t.Errorf("second forget: %v, want ErrNotFound", err)
		}
		if got := recallTask(t, s, "go", task, 10); !slices.Equal(ids(got), []string{keep}) {
			t.Errorf("recall after forget %v, want only %s", ids(got), keep)
		}
		// A forgotten lesson learned again is new.
		if id := mustSave(t, s, successLesson("go", task, "1. zstd")); id != gone || mustGet(t, s, id).Recalled != 0 {
			t.Errorf("relearned lesson %s, want %s with fresh counts", id, gone)
		}
	})

	t.Run("list by kind", func(t *testing.T) {
		s := one(t)
		var fixes []string
		for i := range 3 {
			fixes = append(fixes, mustSave(t, s, fixLesson("go", "go:vet", fmt.Sprintf("shape %d", i), "", "task", "fix")))
			time.Sleep(2 * time.Millisecond)
		}
		failure := fixLesson("go", "go:vet", "never fixed", "", "task", "")
		failure.Kind = LessonFailure
		mustSave(t, s, failure)
		mustSave(t, s, successLesson("go", "task", "plan"))
		slices.Reverse(fixes) // newest first
		tests := []struct {
			kind  string
			limit int
			want  int
		}{
			{LessonFix, 0, 3}, {LessonFix, 2, 2}, {LessonFailure, 10, 1}, {LessonSuccess, -1, 1}, {"", 0, 5}, {"hint", 0, 0},
		}
		for _, tt := range tests {
			got := mustList(t, s, tt.kind, tt.limit)
			if len(got) != tt.want {
				t.Errorf("ListLessons(%q, %d) gave %d lessons, want %d", tt.kind, tt.limit, len(got), tt.want)
			}
			for _, l := range got {
				if tt.kind != "" && l.Kind != tt.kind {
					t.Errorf("ListLessons(%q) gave a %s lesson", tt.kind, l.Kind)
				}
			}
			if tt.kind == LessonFix && !slices.Equal(ids(got), fixes[:tt.want]) {
				t.Errorf("fixes in order %v, want newest first %v", ids(got), fixes[:tt.want])
			}
		}
	})

	t.Run("concurrent marks count exactly", func(t *testing.T) {
		a, b := open(t)
		x := mustSave(t, a, successLesson("go", "task x", "plan x"))
		y := mustSave(t, a, successLesson("go", "task y", "plan y"))
		unknown := lessonID(Lesson{Kind: LessonFix})
		const workers, marks = 8, 25
		var wg sync.WaitGroup
		errs := make(chan error, workers)
		for w := range workers {
			s := []Store{a, b}[w%2]
			// Opposite orders on the two stores would deadlock a naive
			// row-by-row update.
			set := []Recall{{ID: x, FailedChecks: 1}, {ID: y, FailedChecks: 1}, {ID: unknown}, {ID: x}}
			if w%2 == 1 {
				set = []Recall{{ID: y, FailedChecks: 1}, {ID: x, FailedChecks: 1}}
			}
			wg.Go(func() {
				for i := range marks {
					if err := s.MarkRecalled(ctx, set, (w+i)%2 == 0); err != nil {
						errs <- err
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		for _, id := range []string{x, y} {
			l := mustGet(t, b, id)
			if l.Recalled != workers*marks || l.Succeeded != workers*marks/2 || l.Misled != workers*marks/2 || l.FailedChecks != workers*marks {
				t.Errorf("lesson %s counts %d/%d/%d/%d, want %d/%d/%d/%d", id, l.Recalled, l.Succeeded, l.Misled, l.FailedChecks,
					workers*marks, workers*marks/2, workers*marks/2, workers*marks)
			}
		}
	})

	t.Run("not found and empty queries", func(t *testing.T) {
		s := one(t)
		mustSave(t, s, successLesson("go", "go build fails", "plan"))
		if _, err := s.GetLesson(ctx, "absent"); !errors.Is(err, ErrNotFound) {
			t.Errorf("GetLesson(absent) = %v, want ErrNotFound", err)
		}
		for _, q := range []struct {
			task string
			k    int
		}{{"go build fails", 0}, {"", 5}, {"?!", 5}} {
			if got := recallTask(t, s, "go", q.task, q.k); len(got) != 0 {
				t.Errorf("recall %q k=%d gave %d lessons, want none", q.task, q.k, len(got))
			}
		}
		if err := s.MarkRecalled(ctx, nil, true); err != nil {
			t.Errorf("MarkRecalled(nil) = %v", err)
		}
	})
}

// TestLessonRankingAgrees saves one fixture set on both backends and
// requires every recall to return the same lessons in the same order.
func TestLessonRankingAgrees(t *testing.T) {
	ctx := context.Background()
	stores := make([]Store, len(backends))
	for i, b := range backends {
		stores[i] = openTarget(t, b.target(t))
	}
	fixtures := benchLessons(300)
	for _, s := range stores {
		for i, l := range fixtures {
			id := mustSave(t, s, l)
			if i%7 == 0 {
				if err := s.MarkRecalled(ctx, recalls(id), i%3 != 0); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	queries := benchQueries(20)
	for _, q := range queries {
		var orders [][]string
		for _, s := range stores {
			byTask := recallTask(t, s, q.Language, q.Task, 10)
			bySig, err := s.RecallBySignature(ctx, q.Language, q.SigKind, q.SigShape, q.SigText, 10)
			if err != nil {
				t.Fatal(err)
			}
			if len(byTask) == 0 || len(bySig) == 0 {
				t.Fatalf("query %q recalled %d by task, %d by signature; the fixtures should match", q.Task, len(byTask), len(bySig))
			}
			orders = append(orders, append(ids(byTask), ids(bySig)...))
		}
		for i := 1; i < len(orders); i++ {
			if !slices.Equal(orders[i], orders[0]) {
				t.Errorf("query %q:\n%s: %v\n%s: %v", q.Task, backends[0].name, orders[0], backends[i].name, orders[i])
			}
		}
	}
}

// TestSimilarityMatchesPgTrgm checks that the similarity ranking computes
// is the one pg_trgm's index selects candidates by.
func TestSimilarityMatchesPgTrgm(t *testing.T) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, postgresTarget(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_trgm"); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ a, b string }{
		{"add retry to the http client", "add exponential backoff retry to the HTTP client"},
		{"AssertionError: assert N == N", "assert total(cart) == 10"},
		{"foo_bar.baz(qux)", "foo bar baz"},
		{"a", "a"},
		{"", "nothing"},
		{"Überprüfung der Größe", "überprüfung groesse"},
		{"x1 y22 z333", "z333 y22"},
	}
	for _, tt := range tests {
		var want float64
		if err := conn.QueryRow(ctx, "SELECT similarity($1, $2)::float8", tt.a, tt.b).Scan(&want); err != nil {
			t.Fatal(err)
		}
		// pg_trgm returns a float4.
		if got := similarity(trigrams(tt.a), trigrams(tt.b)); math.Abs(got-want) > 1e-6 {
			t.Errorf("similarity(%q, %q) = %v, pg_trgm says %v", tt.a, tt.b, got, want)
		}
	}
}

func TestLearningFactor(t *testing.T) {
	tests := []struct {
		succeeded, misled int
		want              float64
	}{
		{0, 0, 1}, {1, 0, 2}, {3, 0, 4}, {9, 0, 4}, {0, 1, 0.5}, {0, 3, 0.25}, {0, 9, 0.25}, {2, 2, 1},
	}
	for _, tt := range tests {
		if got := learning(tt.succeeded, tt.misled); got != tt.want {
			t.Errorf("learning(%d succeeded, %d misled) = %v, want %v", tt.succeeded, tt.misled, got, tt.want)
		}
	}
}

// recalls are ids recalled with no failed check after them.
func recalls(ids ...string) []Recall {
	out := make([]Recall, len(ids))
	for i, id := range ids {
		out[i] = Recall{ID: id}
	}
	return out
}

func fixLesson(language, sigKind, sigShape, sigText, task, fix string) Lesson {
	return Lesson{Kind: LessonFix, Language: language, SigKind: sigKind, SigShape: sigShape,
		SigText: sigText, Task: task, FailedExcerpt: "FAIL", Fix: fix, Reflection: "because"}
}

func successLesson(language, task, plan string) Lesson {
	return Lesson{Kind: LessonSuccess, Language: language, Task: task, Fix: plan}
}

func mustSave(tb testing.TB, s LessonStore, l Lesson) string {
	tb.Helper()
	id, err := s.SaveLesson(context.Background(), l)
	if err != nil {
		tb.Fatal(err)
	}
	return id
}

func mustGet(tb testing.TB, s LessonStore, id string) Lesson {
	tb.Helper()
	l, err := s.GetLesson(context.Background(), id)
	if err != nil {
		tb.Fatal(err)
	}
	return l
}

func mustList(tb testing.TB, s LessonStore, kind string, limit int) []Lesson {
	tb.Helper()
	ls, err := s.ListLessons(context.Background(), kind, limit)
	if err != nil {
		tb.Fatal(err)
	}
	return ls
}

func recallTask(tb testing.TB, s LessonStore, language, task string, k int) []ScoredLesson {
	tb.Helper()
	got, err := s.RecallByTask(context.Background(), language, task, k)
	if err != nil {
		tb.Fatal(err)
	}
	return got
}

// lessonKey lets ids read both Lesson and ScoredLesson.
func (l Lesson) lessonKey() string { return l.ID }

func ids[L interface{ lessonKey() string }](ls []L) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.lessonKey()
	}
	return out
}

func scores(ls []ScoredLesson) []float64 {
	out := make([]float64, len(ls))
	for i, l := range ls {
		out[i] = l.Score
	}
	return out
}

// names shows got by position in want, or by task when not in it.
func names(got []ScoredLesson, want []string) []string {
	out := make([]string, len(got))
	for i, l := range got {
		if j := slices.Index(want, l.ID); j >= 0 {
			out[i] = fmt.Sprintf("want[%d]", j)
		} else {
			out[i] = fmt.Sprintf("%q", l.Task)
		}
	}
	return out
}

func descending(ls []ScoredLesson) bool {
	return slices.IsSortedFunc(ls, func(a, b ScoredLesson) int { return cmp.Compare(b.Score, a.Score) })
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
