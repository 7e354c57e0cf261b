package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/autocoder/autocoder/activities"
	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/internal/llmtest"
	"github.com/autocoder/autocoder/internal/repogen"
	"github.com/autocoder/autocoder/internal/store"
	"github.com/autocoder/autocoder/internal/taskclient"
	"github.com/autocoder/autocoder/internal/workspace"
	"github.com/autocoder/autocoder/sandbox"
	"github.com/autocoder/autocoder/worker"
	"github.com/autocoder/autocoder/workflows"
)

// heldTask is one of the test suite's tool-loop tasks, as the cost
// benchmark runs it: its project, its input, and the scripted agent that
// solves it.
type heldTask struct {
	name  string
	files []workspace.File
	in    workflows.TaskInput
	agent func(p *problems) func(turnView) llmtest.Reply
	// solved tells a finished task's files right.
	solved func(files []workspace.File) bool
}

func heldTasks() []heldTask {
	repo := repogen.Generate(repogen.Options{Seed: 1})
	var plan []string
	for i, s := range geometrySteps {
		plan = append(plan, fmt.Sprintf("%d. %s", i+1, s.step))
	}
	return []heldTask{
		{name: fmt.Sprintf("large repository (%d files)", len(repo.Files)), files: repo.Files,
			in: workflows.TaskInput{Task: repo.Bug.Symptom, Language: "python", TestCmd: repo.TestCmd, MaxIterations: 2},
			agent: func(p *problems) func(turnView) llmtest.Reply {
				hunt := bugHunter(repo, p)
				return func(v turnView) llmtest.Reply {
					return hunt.answer("1. Find apply_discount's bug, fix it and run the tests.", v)
				}
			},
			solved: func(files []workspace.File) bool {
				return strings.Contains(string(fileData(files, repo.Bug.Path)), repo.Bug.Fixed)
			}},
		{name: "3-step plan", files: []workspace.File{{Path: "test_geometry.py", Data: []byte(geometryTests)}},
			in: workflows.TaskInput{Task: "Write geometry.py with square_area, square_perimeter and describe_square so that test_geometry.py passes.",
				Language: "python", TestCmd: "python3 -m pytest -q", MaxIterations: workflows.DefaultMaxIterations},
			agent: func(p *problems) func(turnView) llmtest.Reply {
				work := stepWorker(p)
				return func(v turnView) llmtest.Reply { return work.answer(strings.Join(plan, "\n"), v) }
			},
			solved: func(files []workspace.File) bool { return string(fileData(files, "geometry.py")) == geometryFile(3) }},
	}
}

// BenchmarkCostPerSolvedTask runs the held tool-loop tasks (the bug hunt
// in the 336-file repository, the 3-step plan and the 30-turn reading
// task) against the scripted Anthropic and OpenAI servers, which cache as
// the APIs document (a read after an identical prefix, counted in usage),
// with prompt caching and without, in one run, and prints tokens and USD
// per solved task. Each run has a store of its own, so none recalls the
// lessons of another. OpenAI caches on its own: its "without" is the same
// run's input priced as fresh.
//
//	go test -run '^$' -bench CostPerSolvedTask -benchtime 1x ./internal/e2e/
func BenchmarkCostPerSolvedTask(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	sb, _, c := benchServices(ctx, b)
	providers := map[string]scriptedProvider{}
	for _, p := range scriptedProviders {
		providers[p.name] = p
	}
	for range b.N {
		w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(w, "task\tprovider\tcaching\tsolved\tfresh in\tcached in\tcache writes\tout\tUSD\tUSD ratio\t")
		row := func(task, provider, caching string, solved bool, u activities.Usage, usd, base float64) {
			fmt.Fprintf(w, "%s\t%s\t%s\t%v\t%d\t%d\t%d\t%d\t%.4f\t%.3f\t\n", task, provider, caching, solved,
				u.PromptTokens-u.CachedTokens, u.CachedTokens, u.CacheWriteTokens, u.CompletionTokens, usd, usd/base)
		}
		for _, task := range heldTasks() {
			for _, name := range []string{"anthropic", "openai"} {
				p := providers[name]
				on := solveHeld(ctx, b, sb, c, p, task, false)
				if name == "anthropic" {
					off := solveHeld(ctx, b, sb, c, p, task, true)
					row(task.name, name, "off", off.solved, off.usage, off.usage.CostUSD, off.usage.CostUSD)
					row(task.name, name, "on", on.solved, on.usage, on.usage.CostUSD, off.usage.CostUSD)
					continue
				}
				fresh := freshCost(p.model, on.usage)
				row(task.name, name, "off (priced)", on.solved, on.usage, fresh, fresh)
				row(task.name, name, "on", on.solved, on.usage, on.usage.CostUSD, fresh)
			}
		}
		reading := func(p readingProvider, noCache bool) heldRun {
			r := startReading(ctx, b, ownStore(ctx, b), sb, c, p, 30, 30, noCache, 0)
			defer r.stop()
			res, err := r.tc.Wait(ctx, r.id)
			if err != nil {
				b.Logf("30-turn reading over %s: %v", p.name, err)
			}
			return heldRun{solved: err == nil, usage: res.Status.Usage}
		}
		for _, p := range readingProviders {
			on := reading(p, false)
			if p.name == "anthropic" {
				off := reading(p, true)
				row("30-turn reading", p.name, "off", off.solved, off.usage, off.usage.CostUSD, off.usage.CostUSD)
				row("30-turn reading", p.name, "on", on.solved, on.usage, on.usage.CostUSD, off.usage.CostUSD)
				continue
			}
			fresh := freshCost(p.model, on.usage)
			row("30-turn reading", p.name, "off (priced)", on.solved, on.usage, fresh, fresh)
			row("30-turn reading", p.name, "on", on.solved, on.usage, on.usage.CostUSD, fresh)
		}
		w.Flush()
	}
}

// heldRun is how a held task ended.
type heldRun struct {
	solved bool
	usage  activities.Usage
}

// solveHeld runs task on an in-process worker with the provider's
// scripted agent and a store of its own (no lessons of the runs before
// it); noCache turns prompt caching off where the client places it
// (Anthropic's breakpoints).
func solveHeld(ctx context.Context, b *testing.B, sb sandbox.Runner, c client.Client, p scriptedProvider, task heldTask, noCache bool) heldRun {
	b.Helper()
	st := ownStore(ctx, b)
	var probs problems
	env, _ := p.start(b, task.agent(&probs))
	env.NoPromptCache = noCache
	snap, err := st.PutSnapshot(ctx, task.files)
	if err != nil {
		b.Fatal(err)
	}
	w := worker.New(c, &activities.Activities{Store: st, Sandbox: sb, Models: worker.Models(env)}, worker.Options{})
	if err := w.Start(); err != nil {
		b.Fatalf("start worker: %v", err)
	}
	defer w.Stop()
	in := task.in
	in.InputSnapshot, in.Model = snap, p.model
	tc := taskClient(c)
	run, err := tc.Start(ctx, in, taskclient.StartOptions{})
	if err != nil {
		b.Fatalf("start task: %v", err)
	}
	res, err := tc.Wait(ctx, run.ID)
	if err != nil {
		b.Logf("%s over %s: %v", task.name, p.name, err)
		return heldRun{usage: res.Status.Usage}
	}
	files, err := st.GetSnapshot(ctx, res.SnapshotID)
	if err != nil {
		b.Fatal(err)
	}
	return heldRun{solved: task.solved(files), usage: res.Status.Usage}
}

// ownStore is a new store, for a run that recalls no lessons of the runs
// before it.
func ownStore(ctx context.Context, b *testing.B) store.Store {
	st, err := store.OpenSQLite(ctx, b.TempDir()+"/autocoder.db")
	if err != nil {
		b.Fatalf("open store: %v", err)
	}
	b.Cleanup(func() { st.Close() })
	return st
}

// freshCost is usage's cost at the model's list prices with every input
// token priced as fresh.
func freshCost(model string, u activities.Usage) float64 {
	spec, _ := llm.ParseSpec(model)
	price, _ := llm.PriceOf(spec.Model)
	return price.Cost(llm.Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens})
}
