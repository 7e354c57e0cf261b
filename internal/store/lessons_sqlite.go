package store

import (
	"context"
	"database/sql/driver"
	"encoding/binary"
	"fmt"
	"strings"
	"time"

	"modernc.org/sqlite"
)

// sqliteTimeLayout is fixed width, so the text order of stored times is
// their time order.
const sqliteTimeLayout = "2006-01-02T15:04:05.000000Z"

// sqliteTime scans a time stored as sqliteTimeLayout text.
type sqliteTime struct{ t *time.Time }

func (st sqliteTime) Scan(src any) error {
	s, ok := src.(string)
	if !ok {
		return fmt.Errorf("scan time: got %T, want text", src)
	}
	t, err := time.Parse(sqliteTimeLayout, s)
	if err != nil {
		return fmt.Errorf("scan time: %w", err)
	}
	*st.t = t
	return nil
}

func sqliteTimeDest(t *time.Time) any { return sqliteTime{t} }

// sqliteScoreFunc is lessonScore as an SQL function of (text, packed
// query trigrams, succeeded, setbacks, kind match, least similarity), so the
// candidates SQLite hands to rankLessons are the best by the score that
// ranks them; sqliteTopicFunc is topicWords, for the text of a task.
const (
	sqliteScoreFunc = "autocoder_lesson_score"
	sqliteTopicFunc = "autocoder_topic_words"
)

// The driver registers functions for every connection opened afterwards.
func init() {
	sqlite.MustRegisterDeterministicScalarFunction(sqliteScoreFunc, 6, func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
		text, ok1 := args[0].(string)
		want, ok2 := args[1].([]byte)
		succeeded, ok3 := args[2].(int64)
		setbacks, ok4 := args[3].(int64)
		kindMatch, ok5 := args[4].(int64)
		minSim, ok6 := args[5].(float64)
		if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 || !ok6 {
			return nil, fmt.Errorf("%s: arguments of types %T, %T, %T, %T, %T, %T",
				sqliteScoreFunc, args[0], args[1], args[2], args[3], args[4], args[5])
		}
		return lessonScore(unpackTrigrams(want), text, int(succeeded), int(setbacks), kindMatch != 0, minSim), nil
	})
	sqlite.MustRegisterDeterministicScalarFunction(sqliteTopicFunc, 1, func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
		text, ok := args[0].(string)
		if !ok {
			return nil, fmt.Errorf("%s: argument of type %T", sqliteTopicFunc, args[0])
		}
		return topicWords(text), nil
	})
}

// packTrigrams encodes trigrams for sqliteScoreFunc.
func packTrigrams(grams []uint64) []byte {
	b := make([]byte, 0, 8*len(grams))
	for _, g := range grams {
		b = binary.LittleEndian.AppendUint64(b, g)
	}
	return b
}

func unpackTrigrams(b []byte) []uint64 {
	grams := make([]uint64, len(b)/8)
	for i := range grams {
		grams[i] = binary.LittleEndian.Uint64(b[8*i:])
	}
	return grams
}

// placeholders returns n comma-separated SQLite parameters.
func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

// SaveLesson implements LessonStore.
func (s *SQLite) SaveLesson(ctx context.Context, l Lesson) (string, error) {
	p, err := prepareLesson(l, time.Now())
	if err != nil {
		return "", fmt.Errorf("save lesson: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := p.UpdatedAt.Format(sqliteTimeLayout)
	_, err = s.db.ExecContext(ctx, `INSERT INTO lessons (`+lessonColumns("")+`)
		VALUES (`+placeholders(16)+`)
		ON CONFLICT (id) DO UPDATE SET updated_at = excluded.updated_at`,
		p.ID, p.Kind, p.Language, p.SigKind, p.SigShape, p.SigText, p.Task, p.FailedExcerpt, p.Fix,
		p.Reflection, p.Recalled, p.Succeeded, p.Misled, p.FailedChecks, now, now)
	if err != nil {
		return "", fmt.Errorf("save lesson %s: %w", p.ID, err)
	}
	return p.ID, nil
}

// RecallByTask implements LessonStore.
func (s *SQLite) RecallByTask(ctx context.Context, language, task string, k int) ([]ScoredLesson, error) {
	ls, err := s.recall(ctx, taskQuery(language, task, k))
	if err != nil {
		return nil, fmt.Errorf("recall by task: %w", err)
	}
	return ls, nil
}

// RecallBySignature implements LessonStore.
func (s *SQLite) RecallBySignature(ctx context.Context, language, sigKind, sigShape, sigText string, k int) ([]ScoredLesson, error) {
	ls, err := s.recall(ctx, sigQuery(language, sigKind, sigShape, sigText, k))
	if err != nil {
		return nil, fmt.Errorf("recall by signature: %w", err)
	}
	return ls, nil
}

// recall fetches the candidates that share a trigram with the query by
// the full-text index, best first by lessonScore, and ranks them.
func (s *SQLite) recall(ctx context.Context, q recallQuery) ([]ScoredLesson, error) {
	grams := queryTrigrams(q.text)
	if q.k <= 0 || len(grams) == 0 {
		return nil, nil
	}
	column, text, kindMatch := "task", sqliteTopicFunc+"(l.task)", "0"
	if q.bySig {
		column, text, kindMatch = "sig", "l.sig_shape || ' ' || l.sig_text", "l.sig_kind = ?"
	}
	// The terms hold only letters and digits, so quoting them is enough.
	args := []any{column + ` : ("` + strings.Join(grams, `" OR "`) + `")`, q.language}
	for _, k := range q.kinds {
		args = append(args, k)
	}
	args = append(args, packTrigrams(trigrams(q.compared())))
	if q.bySig {
		args = append(args, q.sigKind)
	}
	args = append(args, q.minSim, q.limit())
	rs, err := s.db.QueryContext(ctx, `SELECT `+lessonColumns("l")+`
		FROM lessons_fts JOIN lessons l ON l.seq = lessons_fts.rowid
		WHERE lessons_fts MATCH ? AND l.language = ? AND l.kind IN (`+placeholders(len(q.kinds))+`)
		ORDER BY `+sqliteScoreFunc+`(`+text+`, ?, l.succeeded, l.misled + l.failed_checks, `+kindMatch+`, ?) DESC,
			l.updated_at DESC, l.id
		LIMIT ?`, args...)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	ls, err := scanLessons(rs, sqliteTimeDest)
	if err != nil {
		return nil, err
	}
	return rankLessons(q, ls), nil
}

// MarkRecalled implements LessonStore. One statement updates every row, so
// the counts move together; unknown ids are ignored.
func (s *SQLite) MarkRecalled(ctx context.Context, recalls []Recall, succeeded bool) error {
	recalls = distinctRecalls(recalls)
	if len(recalls) == 0 {
		return nil
	}
	won, lost := outcome(succeeded)
	// The failed checks of each row come from a VALUES list joined by id.
	var args []any
	for _, r := range recalls {
		args = append(args, r.ID, r.FailedChecks)
	}
	args = append(args, won, lost)
	s.mu.Lock()
	defer s.mu.Unlock()
	_, err := s.db.ExecContext(ctx, `WITH r (id, failed) AS (VALUES `+strings.TrimSuffix(strings.Repeat("(?, ?), ", len(recalls)), ", ")+`)
		UPDATE lessons SET recalled = recalled + 1, succeeded = succeeded + ?, misled = misled + ?,
			failed_checks = failed_checks + (SELECT r.failed FROM r WHERE r.id = lessons.id)
		WHERE id IN (SELECT id FROM r)`, args...)
	if err != nil {
		return fmt.Errorf("mark recalled: %w", err)
	}
	return nil
}

// GetLesson implements LessonStore.
func (s *SQLite) GetLesson(ctx context.Context, id string) (Lesson, error) {
	ls, err := s.queryLessons(ctx, `SELECT `+lessonColumns("")+` FROM lessons WHERE id = ?`, id)
	return oneLesson(id, ls, err)
}

// ListLessons implements LessonStore: the lessons of kind, or of every
// kind when kind is empty, most recently updated first; limit <= 0 lists
// all.
func (s *SQLite) ListLessons(ctx context.Context, kind string, limit int) ([]Lesson, error) {
	where, args := "", []any{}
	if kind != "" {
		where, args = "WHERE kind = ?", append(args, kind)
	}
	if limit <= 0 {
		limit = -1 // SQLite's no limit
	}
	ls, err := s.queryLessons(ctx, `SELECT `+lessonColumns("")+` FROM lessons `+where+`
		ORDER BY updated_at DESC, id LIMIT ?`, append(args, limit)...)
	if err != nil {
		return nil, fmt.Errorf("list lessons: %w", err)
	}
	return ls, nil
}

// ForgetLesson implements LessonStore.
func (s *SQLite) ForgetLesson(ctx context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	res, err := s.db.ExecContext(ctx, `DELETE FROM lessons WHERE id = ?`, id)
	if err != nil {
		return fmt.Errorf("forget lesson %s: %w", id, err)
	}
	n, err := res.RowsAffected()
	return forgotten(id, n, err)
}

func (s *SQLite) queryLessons(ctx context.Context, query string, args ...any) ([]Lesson, error) {
	rs, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	return scanLessons(rs, sqliteTimeDest)
}
