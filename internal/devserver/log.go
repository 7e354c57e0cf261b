package devserver

import (
	"context"
	"log/slog"
	"slices"

	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/log/tag"
)

// minServerLevel keeps the server's routine info/debug chatter out of the
// agent's logs.
const minServerLevel = slog.LevelWarn

// stoppingLevel mutes the server during Stop, where every in-flight poll and
// persistence call reports its cancellation as a warning or an error. Stop
// itself still returns a failure to stop.
const stoppingLevel = slog.LevelError + 1

// serverLogger adapts the server's log.Logger interface to slog. The server
// derives a logger with more tags for nearly every request, and logs from it
// rarely, so tags are converted only when a record is emitted.
type serverLogger struct {
	log  *slog.Logger
	tags []tag.Tag // from With, ahead of each record's own
}

var (
	_ log.Logger     = serverLogger{}
	_ log.WithLogger = serverLogger{}
)

func newServerLogger(l *slog.Logger, min slog.Leveler) serverLogger {
	return serverLogger{log: slog.New(levelHandler{min: min, next: l.Handler()})}
}

// quiet returns l restricted to warnings and errors.
func quiet(l *slog.Logger) *slog.Logger {
	return slog.New(levelHandler{min: minServerLevel, next: l.Handler()})
}

func (l serverLogger) Debug(msg string, tags ...tag.Tag) { l.emit(slog.LevelDebug, msg, tags) }
func (l serverLogger) Info(msg string, tags ...tag.Tag)  { l.emit(slog.LevelInfo, msg, tags) }
func (l serverLogger) Warn(msg string, tags ...tag.Tag)  { l.emit(slog.LevelWarn, msg, tags) }
func (l serverLogger) Error(msg string, tags ...tag.Tag) { l.emit(slog.LevelError, msg, tags) }

// DPanic, Panic and Fatal only log: a server embedded in the agent must not
// take the agent's process down.
func (l serverLogger) DPanic(msg string, tags ...tag.Tag) { l.emit(slog.LevelError, msg, tags) }
func (l serverLogger) Panic(msg string, tags ...tag.Tag)  { l.emit(slog.LevelError, msg, tags) }
func (l serverLogger) Fatal(msg string, tags ...tag.Tag)  { l.emit(slog.LevelError, msg, tags) }

func (l serverLogger) With(tags ...tag.Tag) log.Logger {
	return serverLogger{log: l.log, tags: append(slices.Clip(l.tags), tags...)}
}

func (l serverLogger) emit(level slog.Level, msg string, tags []tag.Tag) {
	ctx := context.Background()
	// Checked first: converting tags is the expensive part.
	if !l.log.Enabled(ctx, level) {
		return
	}
	out := make([]slog.Attr, 0, len(l.tags)+len(tags))
	for _, ts := range [][]tag.Tag{l.tags, tags} {
		for _, t := range ts {
			out = append(out, slog.Any(t.Key(), t.Value()))
		}
	}
	l.log.LogAttrs(ctx, level, msg, out...)
}

// levelHandler drops records below min before they reach next.
type levelHandler struct {
	min  slog.Leveler
	next slog.Handler
}

func (h levelHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return level >= h.min.Level() && h.next.Enabled(ctx, level)
}

func (h levelHandler) Handle(ctx context.Context, r slog.Record) error {
	return h.next.Handle(ctx, r)
}

func (h levelHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return levelHandler{min: h.min, next: h.next.WithAttrs(as)}
}

func (h levelHandler) WithGroup(name string) slog.Handler {
	return levelHandler{min: h.min, next: h.next.WithGroup(name)}
}
