package chaos

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/autocoder/autocoder/internal/devserver"
	"github.com/autocoder/autocoder/internal/llmtest"
	"github.com/autocoder/autocoder/internal/taskclient"
	"github.com/autocoder/autocoder/internal/testenv"
	"github.com/autocoder/autocoder/workflows"
)

// benchModelLatency is the scripted model's fixed wait before it answers.
const benchModelLatency = 200 * time.Millisecond

// taskCost splits one task's latency into model time, sandbox time and the
// rest, which is orchestration: Temporal round trips, store and memo
// writes, prompt building, scheduling between activities. Model time is
// what the model server spent on the task's calls, from a request's
// arrival to its answer's last byte: the fixed wait, reading the request
// and streaming the answer.
type taskCost struct {
	Latency, Model, Sandbox, Overhead time.Duration
	Iterations                        int
	ModelCalls                        []time.Duration // each call's time at the model server
	TestRun                           time.Duration   // the last test run inside the sandbox
	Parts                             overheadParts
	WorkflowTasks                     []activityRun
	FirstSandbox                      time.Time     // when the first sandbox run was scheduled
	SandboxQueued                     time.Duration // sandbox activities waiting for a worker's free slot
	// Loop is the overhead of a retry, measured directly: from the failed
	// check's end to the next check's scheduling (the failure appended to
	// the conversation, the model's turn, its answer applied, and the
	// workflow tasks between), less the model calls made in it. Zero for tasks that passed at once.
	Loop      time.Duration
	LoopParts overheadParts // Loop by where it is spent
	// LoopTimeline lists the retry's events, in ms from the failed
	// check's end (AUTOCODER_BENCH_TIMELINE=1 prints it).
	LoopTimeline string
}

// overheadParts splits the orchestration overhead by where it is spent.
type overheadParts struct {
	WorkflowQueue time.Duration // workflow tasks waiting for a worker
	WorkflowRun   time.Duration // workflow tasks on the worker, and their answer's way back
	ActivityQueue time.Duration // model and store activities waiting for a worker
	ModelExtra    time.Duration // model activities' time beyond the model's own
	Store         time.Duration // store activities: the conversation's writes, answers applied, lessons saved
	Between       time.Duration // the rest: between one event and the next
}

// TestConcurrencyBenchmark runs tasks alone, then many at once, on one
// worker process with bounded sandbox slots and a model answering in a
// fixed 200 ms. It reports the wall times, task latency percentiles, the
// orchestration overhead per task and per iteration, how long workflow
// tasks waited for the worker, and the worker's peak memory. It runs only
// with AUTOCODER_BENCH=1; AUTOCODER_BENCH_TASKS and AUTOCODER_BENCH_SLOTS
// change the load, AUTOCODER_BENCH_SANDBOX the sandbox backend (docker by
// default), and AUTOCODER_BENCH_TIMELINE=1 prints each retry of the tasks
// alone event by event. The Temporal server is the one local mode embeds.
//
// Half the tasks pass at once and half fail once, hear of the failure and
// pass (iterationsOf). The difference of the two halves' median overheads is
// what one more iteration of the loop costs (a model turn, check),
// apart from a task's one-time costs (its start, plan, save of lessons),
// which for tasks started all at once include the queue of their start.
func TestConcurrencyBenchmark(t *testing.T) {
	if os.Getenv("AUTOCODER_BENCH") != "1" {
		t.Skip("benchmark: set AUTOCODER_BENCH=1 to run it")
	}
	requireDocker(t)
	tasks, slots := envInt(t, "AUTOCODER_BENCH_TASKS", 100), envInt(t, "AUTOCODER_BENCH_SLOTS", 4)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()

	bin := testenv.Binary(t)
	// The Temporal server is the one `autocoder run` embeds, with its
	// search attributes, which tasks keep current as they do there.
	srv, c := startTemporal(ctx, t, devserver.Options{DataDir: t.TempDir(), UIPort: devserver.NoUI,
		SearchAttributes: taskclient.SearchAttributes, Logger: slog.New(slog.DiscardHandler)})
	d := benchModelLatency
	passing, failingFirst := taskScript(false, delays{plan: d, generate: d, retry: d}), taskScript(true, delays{plan: d, generate: d, retry: d})
	model := newModelServer(t, func(req llmtest.ChatRequest) llmtest.Reply {
		if n, ok := taskNumber(req); ok && iterationsOf(n) == 2 {
			return failingFirst(req)
		}
		return passing(req)
	})
	env := workerEnv(srv.FrontendAddress(), srv.Namespace(), t.TempDir(), model.URL())
	if backend := os.Getenv("AUTOCODER_BENCH_SANDBOX"); backend != "" {
		env = append(env, "AUTOCODER_SANDBOX="+backend) // the last value wins
	}
	workers := testenv.NewFleet(t, bin, env, "--sandbox-slots", strconv.Itoa(slots))
	w := workers.Start()

	// A warm-up task pays for first-use costs; then tasks alone, in turn.
	if _, _, err := runBatch(ctx, c, model, "bench-warm", []int{1000}); err != nil {
		t.Fatal(err)
	}
	var alone []int
	for i := range aloneRuns {
		alone = append(alone, 2000+i, 5000+i)
	}
	single, singleWall, err := runAlone(ctx, c, model, "bench-alone", alone)
	if err != nil {
		t.Fatal(err)
	}
	var atOnce []int
	for i := range tasks {
		atOnce = append(atOnce, 100+i+(i%2)*5000) // every other task fails once
	}
	many, manyWall, err := runBatch(ctx, c, model, "bench-many", atOnce)
	if err != nil {
		t.Fatal(err)
	}
	peak, err := vmHWM(w.Pid())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Stop(time.Minute); err != nil {
		t.Errorf("graceful stop: %v", err)
	}

	if os.Getenv("AUTOCODER_BENCH_TIMELINE") == "1" {
		for _, c := range single {
			if c.LoopTimeline != "" {
				t.Logf("retry timeline, alone (ms): %s", c.LoopTimeline)
			}
		}
	}
	t.Logf("tasks alone (%d in turn): wall p50 %s; %s; %s", len(alone), singleWall.Round(time.Millisecond), describeCosts(single), perIteration(single))
	t.Logf("%d tasks at once (%d sandbox slots): wall %s (%.1fx one task alone); %s; %s",
		tasks, slots, manyWall.Round(time.Millisecond), float64(manyWall)/float64(singleWall), describeCosts(many), perIteration(many))
	t.Logf("workflow tasks of the %d tasks at once: %s", tasks, describeWorkflowTasks(many))
	t.Logf("worker peak memory (VmHWM): %.1f MiB", float64(peak)/(1<<20))
	t.Logf("summary, tasks alone: %s", summarize(single))
	t.Logf("summary, %d tasks at once: %s; wall %s, %.1fx one task alone; worker peak memory %.1f MiB",
		tasks, summarize(many), manyWall.Round(time.Millisecond), float64(manyWall)/float64(singleWall), float64(peak)/(1<<20))
}

// summarize splits the tasks' orchestration overhead into what each
// iteration of the loop adds (a retry: from a failed check's end to the
// next check's start, less the model calls in it), the target's measure,
// and what a task costs once (its start, plan, first generation and
// lessons), which for tasks started together includes queueing behind
// each other's.
func summarize(cs []taskCost) string {
	var loops, once, lat []time.Duration
	for _, c := range cs {
		if c.Iterations > 1 {
			loops = append(loops, c.Loop)
		}
		once = append(once, c.Overhead-c.Loop)
		lat = append(lat, c.Latency)
	}
	ms := func(d time.Duration) string { return d.Round(time.Millisecond).String() }
	return fmt.Sprintf("orchestration overhead per iteration p50 %s p95 %s over %d retries (target: at most %s p50); "+
		"once per task p50 %s p95 %s; task latency p50 %s p95 %s",
		ms(percentile(loops, 50)), ms(percentile(loops, 95)), len(loops), ms(overheadTarget),
		ms(percentile(once, 50)), ms(percentile(once, 95)), ms(percentile(lat, 50)), ms(percentile(lat, 95)))
}

// overheadTarget is the orchestration overhead an iteration may add, p50.
const overheadTarget = 50 * time.Millisecond

// aloneRuns is how many one-iteration and how many two-iteration tasks
// run alone.
const aloneRuns = 7

// iterationsOf is how many iterations the benchmark's model makes task n
// take: tasks 5000-5999 fail once, hear of it and pass; the others pass.
func iterationsOf(n int) int {
	if n >= 5000 && n < 6000 {
		return 2
	}
	return 1
}

// runAlone runs tasks one after the other and returns their costs and the
// median wall time.
func runAlone(ctx context.Context, c client.Client, model *llmtest.TimedServer, prefix string, numbers []int) ([]taskCost, time.Duration, error) {
	var costs []taskCost
	var walls []time.Duration
	for _, n := range numbers {
		cs, w, err := runBatch(ctx, c, model, prefix, []int{n})
		if err != nil {
			return nil, 0, err
		}
		walls = append(walls, w)
		costs = append(costs, cs...)
	}
	return costs, percentile(walls, 50), nil
}

// runBatch starts the numbered tasks at once, waits for all (each must
// take iterationsOf its number) and returns their costs and the wall time
// from the first start to the last end.
func runBatch(ctx context.Context, c client.Client, model *llmtest.TimedServer, prefix string, numbers []int) ([]taskCost, time.Duration, error) {
	start := time.Now()
	ids := make([]string, len(numbers))
	for i, n := range numbers {
		id, err := startTask(ctx, c, prefix, n, iterationsOf(n)+1, true)
		if err != nil {
			return nil, 0, err
		}
		ids[i] = id
	}
	results := make([]workflows.TaskResult, len(ids))
	for i, id := range ids {
		res, err := waitDone(ctx, c, id)
		if err != nil {
			return nil, 0, err
		}
		if want := iterationsOf(numbers[i]); res.Iterations != want {
			return nil, 0, fmt.Errorf("task %s took %d iterations, want %d", id, res.Iterations, want)
		}
		results[i] = res
	}
	calls := map[int][]modelCall{}
	for _, mc := range model.Calls() {
		calls[mc.Task] = append(calls[mc.Task], mc)
	}
	costs := make([]taskCost, len(numbers))
	var end time.Time
	for i, id := range ids {
		h, err := loadHistory(ctx, c, id)
		if err != nil {
			return nil, 0, err
		}
		costs[i] = costOf(h, results[i], calls[numbers[i]])
		end = maxTime(end, h.End)
	}
	return costs, end.Sub(start), nil
}

// perIteration splits the overhead into a task's one-time part and the
// part each iteration adds: the median overhead of one-iteration tasks,
// and the difference to that of two-iteration tasks, also by part.
func perIteration(cs []taskCost) string {
	by := map[int][]taskCost{}
	for _, c := range cs {
		by[c.Iterations] = append(by[c.Iterations], c)
	}
	diff := func(f func(taskCost) time.Duration) (one, two, added time.Duration) {
		p50 := func(cs []taskCost) time.Duration {
			var ds []time.Duration
			for _, c := range cs {
				ds = append(ds, f(c))
			}
			return percentile(ds, 50)
		}
		one, two = p50(by[1]), p50(by[2])
		return one, two, two - one
	}
	ms := func(d time.Duration) string { return d.Round(time.Millisecond).String() }
	one, two, added := diff(func(c taskCost) time.Duration { return c.Overhead })
	_, _, wq := diff(func(c taskCost) time.Duration { return c.Parts.WorkflowQueue })
	_, _, wr := diff(func(c taskCost) time.Duration { return c.Parts.WorkflowRun })
	_, _, mx := diff(func(c taskCost) time.Duration { return c.Parts.ModelExtra })
	var loops, wq2, wr2, aq2, mx2, st2, bw2 []time.Duration
	for _, c := range by[2] {
		loops = append(loops, c.Loop)
		p := c.LoopParts
		wq2, wr2, aq2 = append(wq2, p.WorkflowQueue), append(wr2, p.WorkflowRun), append(aq2, p.ActivityQueue)
		mx2, st2, bw2 = append(mx2, p.ModelExtra), append(st2, p.Store), append(bw2, p.Between)
	}
	return fmt.Sprintf("overhead p50 of the %d one-iteration tasks %s, of the %d two-iteration tasks %s: "+
		"one more iteration (a model turn, check) adds %s (workflow tasks queued %s, running %s; model activities beyond the model %s); "+
		"measured directly from a failed check's end to the next check's start, less the model, a retry's overhead is p50 %s p95 %s "+
		"(p50 of its parts: workflow tasks queued %s, running %s; model turn queued %s, beyond the model %s; store activities %s; between events %s)",
		len(by[1]), ms(one), len(by[2]), ms(two), ms(added), ms(wq), ms(wr), ms(mx), ms(percentile(loops, 50)), ms(percentile(loops, 95)),
		ms(percentile(wq2, 50)), ms(percentile(wr2, 50)), ms(percentile(aq2, 50)), ms(percentile(mx2, 50)), ms(percentile(st2, 50)), ms(percentile(bw2, 50)))
}

// costOf reads sandbox time from the history, where each sandbox activity
// (check, execute, a tool call run in the sandbox) counts whole from scheduling to completion,
// slot waits included, and model time from the model server's record of
// the task's calls.
func costOf(h taskHistory, res workflows.TaskResult, calls []modelCall) taskCost {
	c := taskCost{Latency: h.End.Sub(h.Start), Iterations: res.Iterations}
	for _, mc := range calls {
		c.ModelCalls = append(c.ModelCalls, mc.End.Sub(mc.Start))
		c.Model += mc.End.Sub(mc.Start)
	}
	p := &c.Parts
	for _, a := range h.Activities {
		switch {
		case isSandboxActivity(a.Type):
			c.Sandbox += a.Finished.Sub(a.Scheduled)
			c.SandboxQueued += a.Started.Sub(a.Scheduled)
			if c.FirstSandbox.IsZero() || a.Scheduled.Before(c.FirstSandbox) {
				c.FirstSandbox = a.Scheduled
			}
		case isStoreActivity(a.Type):
			p.Store += a.Finished.Sub(a.Scheduled)
		default:
			p.ActivityQueue += a.Started.Sub(a.Scheduled)
			p.ModelExtra += a.Finished.Sub(a.Started)
		}
	}
	p.ModelExtra -= c.Model
	var checks []activityRun
	for _, a := range h.Activities {
		if a.Type == "Check" {
			checks = append(checks, a)
		}
	}
	if len(checks) >= 2 {
		slices.SortFunc(checks, func(x, y activityRun) int { return x.Scheduled.Compare(y.Scheduled) })
		c.Loop, c.LoopParts = loopCost(h, calls, checks[0].Finished, checks[1].Scheduled)
		c.LoopTimeline = timeline(h, calls, checks[0].Finished, checks[1].Scheduled)
	}
	c.WorkflowTasks = h.WorkflowTasks
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

// loopCost is the overhead between from and to (a failed check's end and
// the next check's scheduling), less the model calls made in it, and its
// parts.
func loopCost(h taskHistory, calls []modelCall, from, to time.Time) (time.Duration, overheadParts) {
	total := to.Sub(from)
	var model time.Duration
	for _, mc := range calls {
		if mc.Within(from, to) {
			model += mc.End.Sub(mc.Start)
		}
	}
	total -= model
	var p overheadParts
	for _, w := range h.WorkflowTasks {
		if w.within(from, to) {
			p.WorkflowQueue += w.Started.Sub(w.Scheduled)
			p.WorkflowRun += w.Finished.Sub(w.Started)
		}
	}
	for _, a := range h.Activities {
		switch {
		case !a.within(from, to):
		case isStoreActivity(a.Type):
			p.Store += a.Finished.Sub(a.Scheduled)
		default:
			p.ActivityQueue += a.Started.Sub(a.Scheduled)
			p.ModelExtra += a.Finished.Sub(a.Started)
		}
	}
	p.ModelExtra -= model
	p.Between = total - p.WorkflowQueue - p.WorkflowRun - p.ActivityQueue - p.ModelExtra - p.Store
	return total, p
}

// within reports whether the run was scheduled and finished between from
// and to.
func (a activityRun) within(from, to time.Time) bool {
	return !a.Scheduled.Before(from) && !a.Finished.After(to)
}

// timeline lists what happened between from and to: each workflow task
// and activity as [scheduled started finished], each model call as
// [start end], in ms from from.
func timeline(h taskHistory, calls []modelCall, from, to time.Time) string {
	ms := func(t time.Time) string { return fmt.Sprintf("%.1f", float64(t.Sub(from))/float64(time.Millisecond)) }
	var b strings.Builder
	for _, runs := range [][]activityRun{h.WorkflowTasks, h.Activities} {
		for _, a := range runs {
			if a.within(from, to) {
				fmt.Fprintf(&b, "%s[%s %s %s] ", a.Type, ms(a.Scheduled), ms(a.Started), ms(a.Finished))
			}
		}
	}
	for _, mc := range calls {
		if mc.Within(from, to) {
			fmt.Fprintf(&b, "model[%s %s] ", ms(mc.Start), ms(mc.End))
		}
	}
	fmt.Fprintf(&b, "next check scheduled %s", ms(to))
	return b.String()
}

func describeCosts(cs []taskCost) string {
	var lat, perIt, sb, sbq, run []time.Duration
	var wq, wr, aq, mx, st, bw, calls []time.Duration
	for _, c := range cs {
		n := time.Duration(max(c.Iterations, 1))
		calls = append(calls, c.ModelCalls...)
		lat = append(lat, c.Latency)
		perIt = append(perIt, c.Overhead/n)
		sb, sbq = append(sb, c.Sandbox), append(sbq, c.SandboxQueued)
		run = append(run, c.TestRun)
		wq, wr = append(wq, c.Parts.WorkflowQueue/n), append(wr, c.Parts.WorkflowRun/n)
		aq, mx = append(aq, c.Parts.ActivityQueue/n), append(mx, c.Parts.ModelExtra/n)
		st, bw = append(st, c.Parts.Store/n), append(bw, c.Parts.Between/n)
	}
	ms := func(d time.Duration) string { return d.Round(time.Millisecond).String() }
	return fmt.Sprintf("latency p50 %s p95 %s max %s; orchestration overhead per task divided by its iterations p50 %s p95 %s "+
		"(p50 of its parts: workflow tasks queued %s, running %s; model and store activities queued %s; "+
		"model activities beyond the model %s; store activities %s; between events %s); "+
		"sandbox activities per task p50 %s (waiting for a free slot p50 %s; last test run inside the sandbox p50 %s); "+
		"model calls at the model server p50 %s p95 %s (%s of it the scripted wait)",
		ms(percentile(lat, 50)), ms(percentile(lat, 95)), ms(percentile(lat, 100)),
		ms(percentile(perIt, 50)), ms(percentile(perIt, 95)),
		ms(percentile(wq, 50)), ms(percentile(wr, 50)), ms(percentile(aq, 50)), ms(percentile(mx, 50)), ms(percentile(st, 50)), ms(percentile(bw, 50)),
		ms(percentile(sb, 50)), ms(percentile(sbq, 50)), ms(percentile(run, 50)),
		ms(percentile(calls, 50)), ms(percentile(calls, 95)), ms(benchModelLatency))
}

// describeWorkflowTasks gives how long workflow tasks waited for the
// worker and how long the worker took to answer them: those before a
// task's first sandbox run (its start, plan and first generate, which for
// tasks started at once queue behind each other) and those after.
func describeWorkflowTasks(cs []taskCost) string {
	var waitStart, runStart, waitLoop, runLoop []time.Duration
	for _, c := range cs {
		for _, w := range c.WorkflowTasks {
			wait, run := w.Started.Sub(w.Scheduled), w.Finished.Sub(w.Started)
			if w.Scheduled.Before(c.FirstSandbox) {
				waitStart, runStart = append(waitStart, wait), append(runStart, run)
			} else {
				waitLoop, runLoop = append(waitLoop, wait), append(runLoop, run)
			}
		}
	}
	ms := func(ds []time.Duration, p float64) string { return percentile(ds, p).Round(time.Millisecond).String() }
	return fmt.Sprintf("%d before each task's first sandbox run waited p50 %s p95 %s and ran p50 %s p95 %s; "+
		"%d after it waited p50 %s p95 %s and ran p50 %s p95 %s",
		len(waitStart), ms(waitStart, 50), ms(waitStart, 95), ms(runStart, 50), ms(runStart, 95),
		len(waitLoop), ms(waitLoop, 50), ms(waitLoop, 95), ms(runLoop, 50), ms(runLoop, 95))
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
