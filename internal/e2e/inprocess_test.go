package e2e

import (
	"context"
	"errors"
	"github.com/autocoder/autocoder/internal/lang/languages"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/server/temporaltest"

	"github.com/autocoder/autocoder/activities"
	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/internal/llmtest"
	"github.com/autocoder/autocoder/internal/store"
	"github.com/autocoder/autocoder/internal/taskclient"
	"github.com/autocoder/autocoder/internal/testenv"
	"github.com/autocoder/autocoder/internal/workspace"
	"github.com/autocoder/autocoder/sandbox"
	"github.com/autocoder/autocoder/worker"
	"github.com/autocoder/autocoder/workflows"
)

// TestTaskEndToEnd runs each scenario on a real Temporal server with a real
// worker, the real sandbox, the SQLite store and the real openai client
// talking HTTP to a scripted model: the first attempt fails its tests, the
// failure is reported in the same conversation, and the answer passes.
func TestTaskEndToEnd(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	sb, st, c := services(ctx, t, sandbox.Config{})

	for _, sc := range scenarios {
		t.Run(sc.lang, func(t *testing.T) {
			model := llmtest.New(t, sc.script())
			acts := &activities.Activities{
				Store:   st,
				Sandbox: sb,
				Models:  worker.Models(llm.Env{OpenAIKey: "test-key", OpenAIBaseURL: model.URL()}),
			}
			w := worker.New(c, acts, worker.Options{})
			if err := w.Start(); err != nil {
				t.Fatalf("start worker: %v", err)
			}
			defer w.Stop()

			tc := taskClient(c)
			run, err := tc.Start(ctx, workflows.TaskInput{Task: sc.task, Language: sc.lang, Model: "openai:gpt-4.1-mini"}, taskclient.StartOptions{})
			if err != nil {
				t.Fatalf("start workflow: %v", err)
			}

			phases := watchPhases(ctx, tc, run.ID)
			res, err := tc.Wait(ctx, run.ID)
			if err != nil {
				t.Fatalf("task failed: %v", err)
			}
			seen := <-phases
			if !seen[workflows.PhaseReflecting] {
				t.Errorf("status queries never saw the reflecting phase; saw %v", seen)
			}
			if res.Iterations != 2 {
				t.Errorf("iterations = %d, want 2", res.Iterations)
			}
			if n := len(res.Status.Checkpoints); n != 2 || res.Status.Checkpoints[0].Passed || !res.Status.Checkpoints[1].Passed {
				t.Errorf("checkpoints = %+v, want a failed then a passing one", res.Status.Checkpoints)
			}
			if res.Status.Usage.PromptTokens == 0 || res.Status.Usage.CompletionTokens == 0 {
				t.Errorf("token usage not recorded: %+v", res.Status.Usage)
			}
			if calls := model.Calls(); calls != 3 {
				t.Errorf("model calls = %d, want 3 (plan, first turn, turn after the failure)", calls)
			}

			out := t.TempDir()
			files, err := st.GetSnapshot(ctx, res.SnapshotID)
			if err != nil {
				t.Fatalf("read result snapshot: %v", err)
			}
			if err := workspace.WriteDir(out, files); err != nil {
				t.Fatalf("write out: %v", err)
			}
			checkFiles(t, sc, readDir(t, out, sc))
		})
	}
}

// watchPhases queries the status of a running task until it ends and
// reports the set of phases it saw.
func watchPhases(ctx context.Context, tc *taskclient.Client, id string) <-chan map[workflows.Phase]bool {
	out := make(chan map[workflows.Phase]bool, 1)
	go func() {
		seen := map[workflows.Phase]bool{}
		defer func() { out <- seen }()
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			st, err := tc.Status(ctx, id)
			if err == nil {
				seen[st.Phase] = true
			}
			if st.Phase.Done() || (err != nil && !errors.Is(err, taskclient.ErrUnreachable)) {
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return out
}

// taskClient reaches the tasks through c; the tests list none, so the
// namespace New takes for listing is not needed.
func taskClient(c client.Client) *taskclient.Client { return taskclient.New(c, "") }

// TestLongTaskContinuesAsNew runs a task of many iterations with a small
// history limit: it must hop across several runs, keep its plan, counters
// and checkpoints, and finish with the right files.
func TestLongTaskContinuesAsNew(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	sb, st, c := services(ctx, t, sandbox.Config{})

	const failures = 7
	var mu sync.Mutex
	generated := 0
	sc := pythonScenario
	model := llmtest.New(t, func(req llmtest.ChatRequest) llmtest.Reply {
		u := req.LastUser()
		switch {
		case strings.Contains(u, planMarker):
			return llmtest.Reply{Content: sc.plan}
		}
		mu.Lock()
		defer mu.Unlock()
		generated++
		if generated <= failures {
			return llmtest.Reply{Content: sc.buggy}
		}
		return llmtest.Reply{Content: sc.fixed}
	})
	acts := &activities.Activities{Store: st, Sandbox: sb, Models: worker.Models(llm.Env{OpenAIKey: "k", OpenAIBaseURL: model.URL()})}
	w := worker.New(c, acts, worker.Options{})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	tc := taskClient(c)
	run, err := tc.Start(ctx, workflows.TaskInput{Task: sc.task, Language: "python", MaxIterations: 12, HistoryLimit: 40, Model: "openai:gpt-4.1-mini"},
		taskclient.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := tc.Wait(ctx, run.ID)
	if err != nil {
		t.Fatalf("task failed: %v", err)
	}
	if res.Iterations != failures+1 || len(res.Status.Checkpoints) != failures+1 {
		t.Errorf("iterations %d, checkpoints %d; want %d", res.Iterations, len(res.Status.Checkpoints), failures+1)
	}
	if res.Status.Runs < 3 {
		t.Errorf("task used %d runs; want it to continue as new at least twice", res.Status.Runs)
	}
	if want := 1 + (failures + 1); model.Calls() != want {
		t.Errorf("model calls = %d, want %d (one plan, no repeats across runs)", model.Calls(), want)
	}
	files, err := st.GetSnapshot(ctx, res.SnapshotID)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, f := range files {
		got[f.Path] = string(f.Data)
	}
	checkFiles(t, sc, got)
	t.Logf("%d iterations over %d runs", res.Iterations, res.Status.Runs)
}

// services starts what an in-process worker needs: the sandbox (as sc
// configures it), a SQLite store and a real Temporal server.
func services(ctx context.Context, t *testing.T, sc sandbox.Config) (sandbox.Runner, store.Store, client.Client) {
	t.Helper()
	sb, err := sandbox.New(ctx, withProfiles(sc))
	testenv.RequireService(t, "a sandbox backend", err)
	t.Cleanup(func() { sb.Close() })
	st, err := store.OpenSQLite(ctx, t.TempDir()+"/autocoder.db")
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	ts := temporaltest.NewServer(temporaltest.WithT(t))
	return sb, st, ts.GetDefaultClient()
}

// withProfiles serves every language unless the config names some.
func withProfiles(sc sandbox.Config) sandbox.Config {
	if len(sc.Profiles) == 0 {
		sc.Profiles = sandbox.ProfilesOf(languages.All())
	}
	return sc
}

// profilesOf are the named languages' profiles.
func profilesOf(names ...string) []sandbox.Profile {
	var ps []sandbox.Profile
	for _, n := range names {
		ps = append(ps, sandbox.ProfileOf(languages.MustLookup(n)))
	}
	return ps
}
