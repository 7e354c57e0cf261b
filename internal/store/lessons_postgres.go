package store

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

func postgresTimeDest(t *time.Time) any { return t }

// SaveLesson implements LessonStore.
func (s *Postgres) SaveLesson(ctx context.Context, l Lesson) (string, error) {
	p, err := prepareLesson(l, time.Now())
	if err != nil {
		return "", fmt.Errorf("save lesson: %w", err)
	}
	_, err = s.pool.Exec(ctx, `INSERT INTO lessons (`+lessonColumns("")+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $15)
		ON CONFLICT (id) DO UPDATE SET updated_at = excluded.updated_at`,
		p.ID, p.Kind, p.Language, p.SigKind, p.SigShape, p.SigText, p.Task, p.FailedExcerpt, p.Fix,
		p.Reflection, p.Recalled, p.Succeeded, p.Misled, p.FailedChecks, p.UpdatedAt)
	if err != nil {
		return "", fmt.Errorf("save lesson %s: %w", p.ID, err)
	}
	return p.ID, nil
}

// RecallByTask implements LessonStore.
func (s *Postgres) RecallByTask(ctx context.Context, language, task string, k int) ([]ScoredLesson, error) {
	ls, err := s.recall(ctx, taskQuery(language, task, k))
	if err != nil {
		return nil, fmt.Errorf("recall by task: %w", err)
	}
	return ls, nil
}

// RecallBySignature implements LessonStore.
func (s *Postgres) RecallBySignature(ctx context.Context, language, sigKind, sigShape, sigText string, k int) ([]ScoredLesson, error) {
	ls, err := s.recall(ctx, sigQuery(language, sigKind, sigShape, sigText, k))
	if err != nil {
		return nil, fmt.Errorf("recall by signature: %w", err)
	}
	return ls, nil
}

// recall fetches the candidates by the trigram index, best first by the
// score rankLessons computes, here in SQL over whole texts (a task's topic
// words are for the ranking in Go), and ranks them in Go.
func (s *Postgres) recall(ctx context.Context, q recallQuery) ([]ScoredLesson, error) {
	if q.k <= 0 || len(queryTrigrams(q.text)) == 0 {
		return nil, nil
	}
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	// The text expressions match the indexes' so the planner uses them.
	text, bonus := "task", "1"
	if q.bySig {
		text = "(sig_shape || ' ' || sig_text)"
		bonus = "CASE WHEN sig_kind = " + arg(q.sigKind) + " THEN " + arg(sigKindBonus) + "::float8 ELSE 1 END"
	}
	query := arg(q.text)
	sql := `SELECT ` + lessonColumns("") + ` FROM lessons
		WHERE language = ` + arg(q.language) + ` AND kind = ANY(` + arg(q.kinds) + `) AND ` + text + ` % ` + query + `
		ORDER BY similarity(` + text + `, ` + query + `)
			* least(greatest((succeeded + 1)::float8 / (misled + failed_checks + 1), ` + arg(learnMin) + `), ` + arg(learnMax) + `)
			* ` + bonus + ` DESC,
			updated_at DESC, id COLLATE "C"
		LIMIT ` + arg(q.limit())

	var ls []Lesson
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		// % selects by this threshold; set_config(…, true) keeps it to the
		// transaction so pooled connections stay unchanged.
		_, err := tx.Exec(ctx, `SELECT set_config('pg_trgm.similarity_threshold', $1, true)`,
			strconv.FormatFloat(candidateSimilarity, 'f', -1, 64))
		if err != nil {
			return fmt.Errorf("set threshold: %w", err)
		}
		rs, err := tx.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		defer rs.Close()
		ls, err = scanLessons(rs, postgresTimeDest)
		return err
	})
	if err != nil {
		return nil, err
	}
	return rankLessons(q, ls), nil
}

// MarkRecalled implements LessonStore. The rows are locked in id order
// first, so workers marking overlapping sets cannot deadlock; unknown ids
// are ignored.
func (s *Postgres) MarkRecalled(ctx context.Context, recalls []Recall, succeeded bool) error {
	recalls = distinctRecalls(recalls)
	if len(recalls) == 0 {
		return nil
	}
	ids, failed := make([]string, len(recalls)), make([]int, len(recalls))
	for i, r := range recalls {
		ids[i], failed[i] = r.ID, r.FailedChecks
	}
	won, lost := outcome(succeeded)
	_, err := s.pool.Exec(ctx, `WITH r AS (
			SELECT * FROM unnest($1::text[], $2::integer[]) AS r (id, failed)
		), locked AS (
			SELECT id FROM lessons WHERE id = ANY($1) ORDER BY id COLLATE "C" FOR UPDATE
		)
		UPDATE lessons l SET recalled = l.recalled + 1, succeeded = l.succeeded + $3, misled = l.misled + $4,
			failed_checks = l.failed_checks + r.failed
		FROM locked JOIN r ON r.id = locked.id WHERE l.id = locked.id`, ids, failed, won, lost)
	if err != nil {
		return fmt.Errorf("mark recalled: %w", err)
	}
	return nil
}

// GetLesson implements LessonStore.
func (s *Postgres) GetLesson(ctx context.Context, id string) (Lesson, error) {
	ls, err := s.queryLessons(ctx, `SELECT `+lessonColumns("")+` FROM lessons WHERE id = $1`, id)
	return oneLesson(id, ls, err)
}

// ListLessons implements LessonStore: the lessons of kind, or of every
// kind when kind is empty, most recently updated first; limit <= 0 lists
// all.
func (s *Postgres) ListLessons(ctx context.Context, kind string, limit int) ([]Lesson, error) {
	var n *int // NULL is no limit
	if limit > 0 {
		n = &limit
	}
	where, args := "", []any{n}
	if kind != "" {
		where, args = "WHERE kind = $2", append(args, kind)
	}
	ls, err := s.queryLessons(ctx, `SELECT `+lessonColumns("")+` FROM lessons `+where+`
		ORDER BY updated_at DESC, id COLLATE "C" LIMIT $1`, args...)
	if err != nil {
		return nil, fmt.Errorf("list lessons: %w", err)
	}
	return ls, nil
}

// ForgetLesson implements LessonStore.
func (s *Postgres) ForgetLesson(ctx context.Context, id string) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM lessons WHERE id = $1`, id)
	return forgotten(id, tag.RowsAffected(), err)
}

func (s *Postgres) queryLessons(ctx context.Context, query string, args ...any) ([]Lesson, error) {
	rs, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	return scanLessons(rs, postgresTimeDest)
}
