package activities

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/autocoder/autocoder/internal/devserver"
	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/internal/repogen"
	"github.com/autocoder/autocoder/internal/store"
	"github.com/autocoder/autocoder/internal/tools"
)

// toolCallsPerMode is how many read calls each way of running them makes.
const toolCallsPerMode = 60

// BenchmarkReadOnlyToolCall measures what running one read-only tool call
// costs on the generated repository (over 300 files and 2 MiB), in one
// run: the bare tools.Call on files in memory (the baseline); RunTools
// called inline, as inside the model turn's activity (load the transcript
// and the snapshot, call, append the result); RunTools as a local activity
// of a workflow on an embedded Temporal server; and as a regular activity.
// It prints each p50 and its overhead over the baseline:
//
//	go test -run '^$' -bench ReadOnlyToolCall -benchtime 1x ./activities/
func BenchmarkReadOnlyToolCall(b *testing.B) {
	ctx := context.Background()
	repo := repogen.Generate(repogen.Options{Seed: 1})
	st, err := store.OpenSQLite(ctx, b.TempDir()+"/bench.db")
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	acts := &Activities{Store: st}
	snap, err := st.PutSnapshot(ctx, repo.Files)
	if err != nil {
		b.Fatal(err)
	}
	args, err := json.Marshal(map[string]string{"path": repo.Bug.Path})
	if err != nil {
		b.Fatal(err)
	}
	// Each call answers a turn of its own transcript, as in a loop.
	transcripts := 0
	newCalls := func() []RunToolsInput {
		ins := make([]RunToolsInput, toolCallsPerMode)
		for i := range ins {
			transcripts++
			id := fmt.Sprintf("bench-%d", transcripts)
			err := acts.appendMessages(ctx, id, 0,
				llm.Message{Role: llm.RoleUser, Text: "Fix the discount."},
				llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "read", Arguments: string(args)}}})
			if err != nil {
				b.Fatal(err)
			}
			ins[i] = RunToolsInput{Transcript: id, Position: 2, Snapshot: snap}
		}
		return ins
	}
	check := func(out RunToolsOutput) {
		if out.Length != 3 || out.Results[0].IsError {
			b.Fatalf("read call: %+v", out)
		}
	}

	var bare, inline []time.Duration
	for range toolCallsPerMode {
		start := time.Now()
		if res, err := tools.Call(repo.Files, "read", args, tools.Limits{}); err != nil || res.IsError {
			b.Fatalf("read: %v %s", err, res.Text)
		}
		bare = append(bare, time.Since(start))
	}
	for _, in := range newCalls() {
		start := time.Now()
		out, err := acts.RunTools(ctx, in)
		if err != nil {
			b.Fatal(err)
		}
		check(out)
		inline = append(inline, time.Since(start))
	}
	local, regular := viaWorkflow(b, acts, newCalls(), check)

	base := p50(bare)
	fmt.Printf("read-only tool call on %d files, %d calls each (p50; overhead over the bare call):\n", len(repo.Files), toolCallsPerMode)
	for _, m := range []struct {
		name string
		d    []time.Duration
	}{{"bare", bare}, {"inline", inline}, {"local-activity", local}, {"activity", regular}} {
		fmt.Printf("  %-17s p50 %8.2f ms  overhead %8.2f ms\n", m.name, ms(p50(m.d)), ms(p50(m.d)-base))
		b.ReportMetric(ms(p50(m.d)), m.name+"-p50-ms")
	}
}

// viaWorkflow runs the calls one after another from a workflow on an
// embedded server, as local activities and then as regular ones, and
// returns how long each took as the workflow saw it: from one call's
// start to the next's.
func viaWorkflow(b *testing.B, acts *Activities, ins []RunToolsInput, check func(RunToolsOutput)) (local, regular []time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	quiet := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	srv, err := devserver.Start(ctx, devserver.Options{DataDir: b.TempDir(), UIPort: devserver.NoUI, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Stop()
	c, err := client.Dial(client.Options{HostPort: srv.FrontendAddress(), Namespace: srv.Namespace(), Logger: sdklog.NewStructuredLogger(quiet)})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()

	var mu sync.Mutex
	var starts []time.Time
	timed := func(ctx context.Context, in RunToolsInput) (RunToolsOutput, error) {
		mu.Lock()
		starts = append(starts, time.Now())
		mu.Unlock()
		return acts.RunTools(ctx, in)
	}
	const queue = "tool-bench"
	w := worker.New(c, queue, worker.Options{})
	w.RegisterWorkflowWithOptions(toolCallsWorkflow, workflow.RegisterOptions{Name: "toolCalls"})
	w.RegisterActivityWithOptions(timed, activityOptions("RunTools"))
	if err := w.Start(); err != nil {
		b.Fatal(err)
	}
	defer w.Stop()

	for _, asLocal := range []bool{true, false} {
		starts = nil
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: queue}, "toolCalls", ins, asLocal)
		if err != nil {
			b.Fatal(err)
		}
		var outs []RunToolsOutput
		if err := run.Get(ctx, &outs); err != nil {
			b.Fatal(err)
		}
		for _, o := range outs {
			check(o)
		}
		end := time.Now()
		intervals := make([]time.Duration, len(starts))
		for i, s := range starts {
			next := end
			if i+1 < len(starts) {
				next = starts[i+1]
			}
			intervals[i] = next.Sub(s)
		}
		if asLocal {
			local = intervals
		} else {
			regular = intervals
		}
		// Each run's transcripts now hold their results; the second run
		// needs fresh ones.
		ins = freshCopies(b, acts, ins)
	}
	return local, regular
}

// freshCopies copies each input's transcript, up to its position, to a new id.
func freshCopies(b *testing.B, acts *Activities, ins []RunToolsInput) []RunToolsInput {
	ctx := context.Background()
	out := make([]RunToolsInput, len(ins))
	for i, in := range ins {
		msgs, err := acts.conversation(ctx, in.Transcript)
		if err != nil {
			b.Fatal(err)
		}
		in.Transcript += "-again"
		if err := acts.appendMessages(ctx, in.Transcript, 0, msgs[:in.Position]...); err != nil {
			b.Fatal(err)
		}
		out[i] = in
	}
	return out
}

func activityOptions(name string) activity.RegisterOptions {
	return activity.RegisterOptions{Name: name}
}

// toolCallsWorkflow runs the calls one at a time, as local activities or
// regular ones.
func toolCallsWorkflow(ctx workflow.Context, ins []RunToolsInput, asLocal bool) ([]RunToolsOutput, error) {
	ctx = workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{StartToCloseTimeout: time.Minute})
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	var outs []RunToolsOutput
	for _, in := range ins {
		var out RunToolsOutput
		var f workflow.Future
		if asLocal {
			f = workflow.ExecuteLocalActivity(ctx, "RunTools", in)
		} else {
			f = workflow.ExecuteActivity(ctx, "RunTools", in)
		}
		if err := f.Get(ctx, &out); err != nil {
			return nil, err
		}
		outs = append(outs, out)
	}
	return outs, nil
}

func p50(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
