package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/autocoder/autocoder/internal/llmtest"
	"github.com/autocoder/autocoder/internal/store"
	"github.com/autocoder/autocoder/internal/testenv"
	"github.com/autocoder/autocoder/workflows"
)

// learningScript is a model that repeats a bug unless it is told the fix:
// by the report of its failed check (the first task) or by a recalled
// lesson holding the verified change (any later task).
func learningScript() llmtest.Script {
	sc := pythonScenario
	return llmtest.Rules(
		llmtest.Rule{Contains: planMarker, Reply: llmtest.Reply{Content: sc.plan}},
		// The verified change itself, as a recalled lesson quotes it.
		llmtest.Rule{Contains: "+    return a + b", Reply: llmtest.Reply{Content: sc.fixed + fence("test_calc.py", "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n")}},
		llmtest.Rule{Contains: retryMarker, Reply: llmtest.Reply{Content: sc.fixed}},
		llmtest.Rule{Contains: "", Reply: llmtest.Reply{Content: sc.buggy}},
	)
}

// freshDatabase creates a database on the test Postgres server for one test.
func freshDatabase(t *testing.T) string {
	t.Helper()
	base := os.Getenv("AUTOCODER_TEST_DATABASE_URL")
	if base == "" {
		testenv.RequireService(t, "Postgres (AUTOCODER_TEST_DATABASE_URL, see scripts/postgres.sh)", fmt.Errorf("not set"))
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	testenv.RequireService(t, "Postgres", err)
	defer conn.Close(ctx)
	name := fmt.Sprintf("autocoder_e2e_%d", time.Now().UnixNano())
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), base)
		if err == nil {
			_, _ = c.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
			c.Close(context.Background())
		}
	})
	cfg, err := pgx.ParseConfig(base)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Replace(base, "/"+cfg.Database, "/"+name, 1)
}

// TestLessonsMakeTheSecondTaskCheaper: a first task fails once and is fixed;
// its verified fix is saved to Postgres. The worker is stopped and a new
// worker process (same Postgres) takes a similar task: the recalled lesson
// puts the fix in the first prompt, so it passes on the first attempt with
// fewer tokens, and the lesson is credited.
func TestLessonsMakeTheSecondTaskCheaper(t *testing.T) {
	t.Parallel()
	dbURL := freshDatabase(t)
	c := newCluster(t, learningScript(), "AUTOCODER_DATABASE_URL="+dbURL)

	first := c.start("--lang", "python", "Write a function add(a, b) in calc.py that returns the sum, with pytest tests.")
	st1 := c.waitFor(first, "success", phase(workflows.PhaseSucceeded))

	c.stopWorkers()
	c.startWorker() // a different process: lessons come from Postgres, not memory

	second := c.start("--lang", "python", "Write a function add(a, b) in calc.py that adds two numbers, with pytest tests.")
	st2 := c.waitFor(second, "success", phase(workflows.PhaseSucceeded))

	tok1 := st1.Usage.PromptTokens + st1.Usage.CompletionTokens
	tok2 := st2.Usage.PromptTokens + st2.Usage.CompletionTokens
	t.Logf("first task: %d iterations, %d tokens (%d calls); second: %d iterations, %d tokens (%d calls)",
		st1.Iteration, tok1, st1.Usage.Calls, st2.Iteration, tok2, st2.Usage.Calls)
	if st1.Iteration != 2 {
		t.Errorf("first task took %d iterations, want 2", st1.Iteration)
	}
	if st2.Iteration >= st1.Iteration || tok2 >= tok1 {
		t.Errorf("second task not cheaper: %d iterations/%d tokens vs %d/%d", st2.Iteration, tok2, st1.Iteration, tok1)
	}
	if len(st2.Lessons) == 0 {
		t.Error("the second task's status names no recalled lesson")
	}

	out := c.mustCLI("lessons", "list", "--kind", "fix", "--json")
	var fixes []store.Lesson
	if err := json.Unmarshal([]byte(out), &fixes); err != nil {
		t.Fatalf("lessons list: %v\n%s", err, out)
	}
	if len(fixes) != 1 || fixes[0].Recalled != 1 || fixes[0].Succeeded != 1 || !strings.Contains(fixes[0].Fix, "+    return a + b") {
		t.Errorf("fix lessons = %+v, want one verified fix recalled once with success", fixes)
	}
	show := c.mustCLI("lessons", "show", fixes[0].ID[:10])
	if !strings.Contains(show, "python:AssertionError") && !strings.Contains(show, "pytest") {
		t.Errorf("lessons show lacks the signature:\n%s", show)
	}
}
