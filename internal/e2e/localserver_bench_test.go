package e2e

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/llmtest"
)

// BenchmarkRunOverhead measures what autocoder adds to a task's own test:
// a one-line Python task the model gets right at once, run on a fresh data
// dir (the local server starts) and again with that server warm, against
// running its test alone on the host (/usr/bin/python3 -m pytest), in the
// same run. It reports the extra wall time of each run:
//
//	go test ./internal/e2e -run '^$' -bench RunOverhead -benchtime 3x
func BenchmarkRunOverhead(b *testing.B) {
	sc := pythonScenario
	model := llmtest.New(b, llmtest.Rules(
		llmtest.Rule{Contains: planMarker, Reply: llmtest.Reply{Content: sc.plan}},
		llmtest.Rule{Contains: "", Reply: llmtest.Reply{Content: sc.fixed +
			fence("test_calc.py", "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n")}},
	))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	var fresh, warm, bare time.Duration
	n := 0
	for b.Loop() {
		l := newLocal(b, model)
		out := filepath.Join(b.TempDir(), "out")
		fresh += timed(b, l.command(ctx, "run", sc.task, "--out", out))
		warm += timed(b, l.command(ctx, "run", sc.task, "--out", out))
		test := exec.CommandContext(ctx, "/usr/bin/python3", "-m", "pytest", "-q", "-p", "no:cacheprovider")
		test.Dir = out
		bare += timed(b, test)
		timed(b, l.command(ctx, "dev", "stop"))
		n++
	}
	per := func(d time.Duration) float64 { return d.Seconds() / float64(n) }
	b.ReportMetric(per(bare), "bare-test-s")
	b.ReportMetric(per(fresh-bare), "extra-fresh-s")
	b.ReportMetric(per(warm-bare), "extra-warm-s")
}

// timed runs cmd, which must succeed, and returns its wall time.
func timed(b *testing.B, cmd *exec.Cmd) time.Duration {
	b.Helper()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Run(); err != nil {
		b.Fatalf("%v: %v\n%s", cmd.Args, err, out.String())
	}
	return time.Since(start)
}
