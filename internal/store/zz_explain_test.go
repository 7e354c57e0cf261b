package store

import (
	"context"
	"os"
	"testing"
	"time"
)

func TestZZExplain(t *testing.T) {
	ctx := context.Background()
	target := postgresTarget(t)
	s := openTarget(t, target).(*Postgres)
	sl := openTarget(t, sqliteTarget(t)).(*SQLite)
	start := time.Now()
	for _, l := range benchLessons(3000) {
		mustSave(t, s, l)
		mustSave(t, sl, l)
	}
	t.Logf("saved in %v", time.Since(start))
	q := benchQueries(1)[0]
	for _, st := range []LessonStore{s, sl} {
		for range 3 {
			start = time.Now()
			recallTask(t, st, q.Language, q.Task, 5)
			t1 := time.Since(start)
			start = time.Now()
			st.RecallBySignature(ctx, q.Language, q.SigKind, q.SigShape, q.SigText, 5)
			t.Logf("%T task %v sig %v", st, t1, time.Since(start))
		}
	}
	os.WriteFile("/tmp/zz_url", []byte(target), 0o600)
	s.pool.Exec(ctx, "ANALYZE lessons")
	tx, _ := s.pool.Begin(ctx)
	defer tx.Rollback(ctx)
	tx.Exec(ctx, `SELECT set_config('pg_trgm.similarity_threshold', '0.1', true)`)
	rs, err := tx.Query(ctx, `EXPLAIN (ANALYZE, BUFFERS) SELECT id FROM lessons WHERE language = $1 AND kind = ANY($2) AND task % $3
	ORDER BY similarity(task, $3) * least(greatest((succeeded + 1)::float8 / (misled + 1), 0.25), 4) DESC, updated_at DESC, id COLLATE "C" LIMIT 50`,
		q.Language, []string{"fix", "success"}, "quantum chromodynamics lattice")
	if err != nil {
		t.Fatal(err)
	}
	lines, _ := scanStrings(rs)
	for _, l := range lines {
		t.Log(l)
	}
	rs, err = tx.Query(ctx, `EXPLAIN (ANALYZE, BUFFERS) SELECT id FROM lessons WHERE language = $1 AND kind = ANY($2) AND (sig_shape || ' ' || sig_text) % $3
	ORDER BY similarity((sig_shape || ' ' || sig_text), $3) DESC LIMIT 50`,
		q.Language, []string{"fix"}, "segmentation fault in libfoo.so")
	if err != nil {
		t.Fatal(err)
	}
	lines, _ = scanStrings(rs)
	for _, l := range lines {
		t.Log(l)
	}
}
