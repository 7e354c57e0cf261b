package chaos

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/server/temporaltest"

	"github.com/autocoder/autocoder/internal/llmtest"
	"github.com/autocoder/autocoder/internal/testenv"
	"github.com/autocoder/autocoder/workflows"
)

// benchModelLatency is the scripted model's fixed answer time.
const benchModelLatency = 200 * time.Millisecond

// taskCost splits one task's latency into model time, sandbox time and the
// rest, which is orchestration: Temporal round trips, store and memo
// writes, prompt building, scheduling between activities.
type taskCost struct {
	Latency, Model, Sandbox, Overhead time.Duration
	Iterations                        int
	TestRun                           time.Duration // the last test run inside the sandbox
	Parts                             overheadParts
}

// overheadParts splits the orchestration overhead by where it is spent.
type overheadParts struct {
	WorkflowQueue time.Duration // workflow tasks waiting for a worker
	WorkflowRun   time.Duration // workflow tasks on the worker, and their answer's way back
	ActivityQueue time.Duration // model and store activities waiting for a worker
	ModelExtra    time.Duration // model activities' time beyond the model's own
	Store         time.Duration // recall and save-lessons activities
	Between       time.Duration // the rest: between one event and the next
}

// TestConcurrencyBenchmark runs one task alone, then many at once, on one
// worker process with bounded sandbox slots and a model answering in a
// fixed 200 ms; every first attempt passes. It reports the wall times,
// task latency percentiles, the orchestration overhead per iteration and
// the worker's peak memory. It runs only with AUTOCODER_BENCH=1;
// AUTOCODER_BENCH_TASKS and AUTOCODER_BENCH_SLOTS change the load.
func TestConcurrencyBenchmark(t *testing.T) {
	if os.Getenv("AUTOCODER_BENCH") != "1" {
		t.Skip("benchmark: set AUTOCODER_BENCH=1 to run it")
	}
	requireDocker(t)
	tasks, slots := envInt(t, "AUTOCODER_BENCH_TASKS", 100), envInt(t, "AUTOCODER_BENCH_SLOTS", 4)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()

	bin := testenv.Binary(t)
	ts := temporaltest.NewServer(temporaltest.WithT(t))
	c := ts.GetDefaultClient()
	d := benchModelLatency
	passing, failingFirst := taskScript(false, delays{plan: d, generate: d, reflect: d}), taskScript(true, delays{plan: d, generate: d, reflect: d})
	model := newModelServer(t, func(req llmtest.ChatRequest) llmtest.Reply {
		if m := taskRE.FindStringSubmatch(req.LastUser()); m != nil && len(m[1]) == 4 && m[1][0] == '5' {
			return failingFirst(req) // tasks 5000-5999 fail once, reflect and pass
		}
		return passing(req)
	})
	workers := newFleet(t, bin, workerEnv(ts.GetFrontendHostPort(), ts.GetDefaultNamespace(), t.TempDir(), model.URL()),
		"--sandbox-slots", strconv.Itoa(slots))
	w := workers.start()

	// One task alone, after a warm-up task that pays for first-use costs;
	// then one whose first attempt fails: the difference of their
	// overheads is what one more iteration of the loop costs (generate,
	// validate, test, reflect, recall), without the task's one-time costs.
	if _, _, err := runBatch(ctx, c, "bench-warm", 1000, 1, 1); err != nil {
		t.Fatal(err)
	}
	single, singleWall, err := runAlone(ctx, c, "bench-single", 2000, 1)
	if err != nil {
		t.Fatal(err)
	}
	twice, _, err := runAlone(ctx, c, "bench-loop", 5000, 2)
	if err != nil {
		t.Fatal(err)
	}
	many, manyWall, err := runBatch(ctx, c, "bench-many", 0, tasks, 1)
	if err != nil {
		t.Fatal(err)
	}
	peak, err := vmHWM(w.cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.stop(time.Minute); err != nil {
		t.Errorf("graceful stop: %v", err)
	}

	t.Logf("one task alone (%d in turn): wall p50 %s; %s", aloneRuns, singleWall.Round(time.Millisecond), describeCosts(single))
	overheads := func(cs []taskCost) []time.Duration {
		var ds []time.Duration
		for _, c := range cs {
			ds = append(ds, c.Overhead)
		}
		return ds
	}
	one, two := percentile(overheads(single), 50), percentile(overheads(twice), 50)
	t.Logf("orchestration overhead of a whole task alone, p50 of %d: %s with one iteration, %s with two; one more iteration of the loop (generate, validate, test, reflect, recall) costs %s",
		aloneRuns, one.Round(time.Millisecond), two.Round(time.Millisecond), (two - one).Round(time.Millisecond))
	t.Logf("%d tasks at once (%d sandbox slots): wall %s (%.1fx one task); %s",
		tasks, slots, manyWall.Round(time.Millisecond), float64(manyWall)/float64(singleWall), describeCosts(many))
	t.Logf("worker peak memory (VmHWM): %.1f MiB", float64(peak)/(1<<20))
}

// aloneRuns is how many tasks runAlone runs one after the other.
const aloneRuns = 7

// runAlone runs aloneRuns tasks one after the other, each taking want
// iterations, and returns their costs and the median wall time.
func runAlone(ctx context.Context, c client.Client, prefix string, first, want int) ([]taskCost, time.Duration, error) {
	var costs []taskCost
	var walls []time.Duration
	for i := range aloneRuns {
		cs, w, err := runBatch(ctx, c, prefix, first+i, 1, want)
		if err != nil {
			return nil, 0, err
		}
		walls = append(walls, w)
		costs = append(costs, cs...)
	}
	return costs, percentile(walls, 50), nil
}

// runBatch starts count tasks numbered from first at once, waits for all
// (each must take want iterations) and returns their costs and the wall
// time from the first start to the last end.
func runBatch(ctx context.Context, c client.Client, prefix string, first, count, want int) ([]taskCost, time.Duration, error) {
	start := time.Now()
	ids := make([]string, count)
	for i := range count {
		id, err := startTask(ctx, c, prefix, first+i, want+1)
		if err != nil {
			return nil, 0, err
		}
		ids[i] = id
	}
	costs := make([]taskCost, count)
	var end time.Time
	for i, id := range ids {
		res, err := waitDone(ctx, c, id)
		if err != nil {
			return nil, 0, err
		}
		h, err := loadHistory(ctx, c, id)
		if err != nil {
			return nil, 0, err
		}
		if res.Iterations != want {
			return nil, 0, fmt.Errorf("task %s took %d iterations, want %d", id, res.Iterations, want)
		}
		costs[i] = costOf(h, res)
		end = maxTime(end, h.End)
	}
	return costs, end.Sub(start), nil
}

// costOf reads model and sandbox time from the history: each model call is
// the fixed latency; each sandbox activity (validate, execute) counts whole
// from scheduling to completion, slot waits included.
func costOf(h taskHistory, res workflows.TaskResult) taskCost {
	c := taskCost{Latency: h.End.Sub(h.Start), Iterations: res.Iterations}
	c.Model = time.Duration(res.Status.Usage.Calls) * benchModelLatency
	p := &c.Parts
	for _, a := range h.Activities {
		switch a.Type {
		case "Validate", "Execute", "Check":
			c.Sandbox += a.Finished.Sub(a.Scheduled)
		case "Recall", "SaveLessons":
			p.Store += a.Finished.Sub(a.Scheduled)
		default:
			p.ActivityQueue += a.Started.Sub(a.Scheduled)
			p.ModelExtra += a.Finished.Sub(a.Started)
		}
	}
	p.ModelExtra -= c.Model
	for _, w := range h.WorkflowTasks {
		p.WorkflowQueue += w.Started.Sub(w.Scheduled)
		p.WorkflowRun += w.Finished.Sub(w.Started)
	}
	if lt := res.Status.LastTest; lt != nil {
		c.TestRun = lt.Duration
	}
	c.Overhead = c.Latency - c.Model - c.Sandbox
	p.Between = c.Overhead - p.WorkflowQueue - p.WorkflowRun - p.ActivityQueue - p.ModelExtra - p.Store
	return c
}

func describeCosts(cs []taskCost) string {
	var lat, perIt, sb, run []time.Duration
	var wq, wr, aq, mx, st, bw []time.Duration
	for _, c := range cs {
		n := time.Duration(max(c.Iterations, 1))
		lat = append(lat, c.Latency)
		perIt = append(perIt, c.Overhead/n)
		sb = append(sb, c.Sandbox)
		run = append(run, c.TestRun)
		wq, wr = append(wq, c.Parts.WorkflowQueue/n), append(wr, c.Parts.WorkflowRun/n)
		aq, mx = append(aq, c.Parts.ActivityQueue/n), append(mx, c.Parts.ModelExtra/n)
		st, bw = append(st, c.Parts.Store/n), append(bw, c.Parts.Between/n)
	}
	ms := func(d time.Duration) string { return d.Round(time.Millisecond).String() }
	return fmt.Sprintf("latency p50 %s p95 %s max %s; orchestration overhead per iteration p50 %s p95 %s "+
		"(p50 of its parts: workflow tasks queued %s, running %s; model and store activities queued %s; "+
		"model activities beyond the model %s; recall and save %s; between events %s); "+
		"sandbox activities per task p50 %s (test run inside the sandbox p50 %s)",
		ms(percentile(lat, 50)), ms(percentile(lat, 95)), ms(percentile(lat, 100)),
		ms(percentile(perIt, 50)), ms(percentile(perIt, 95)),
		ms(percentile(wq, 50)), ms(percentile(wr, 50)), ms(percentile(aq, 50)), ms(percentile(mx, 50)), ms(percentile(st, 50)), ms(percentile(bw, 50)),
		ms(percentile(sb, 50)), ms(percentile(run, 50)))
}

func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive integer", name, s)
	}
	return n
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
