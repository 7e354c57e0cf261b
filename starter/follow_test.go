package starter

import (
	"bufio"
	"context"
	"io"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/autocoder/autocoder/activities"
	"github.com/autocoder/autocoder/workflows"
)

// sentSignal is one answer a gate prompt sent: its signal and the text
// typed with it.
type sentSignal struct {
	name string
	text string
}

type recordingAnswerer struct{ sent []sentSignal }

func (r *recordingAnswerer) Answer(_ context.Context, _ string, a workflows.Answer, text string) error {
	r.sent = append(r.sent, sentSignal{a.Signal, text})
	return nil
}

// gateWithAnswers returns a pending question of kind with the answers the
// workflow gives it.
func gateWithAnswers(kind string) *workflows.Approval {
	return &workflows.Approval{Kind: kind, Question: "question?", Answers: workflows.GateAnswers(kind)}
}

func TestAnswerGate(t *testing.T) {
	tests := []struct {
		name   string
		kind   string
		typed  string
		want   []sentSignal // nil: nothing sent
		err    string       // part of the error, "" for none
		screen []string     // parts of what the person sees
	}{
		{name: "enter at the policy gate asks again", kind: workflows.GatePolicy, typed: "\n\nyes\n",
			want:   []sentSignal{{workflows.SignalApprove, "yes"}},
			screen: []string{"[yes] run it anyway", "an empty answer decides nothing"}},
		{name: "y at the policy gate asks for yes in full", kind: workflows.GatePolicy, typed: "y\nYES\n",
			want:   []sentSignal{{workflows.SignalApprove, "YES"}},
			screen: []string{`type "yes" in full`}},
		{name: "enter then end of input approves nothing", kind: workflows.GatePolicy, typed: "\n",
			err: "the task still waits"},
		{name: "no input approves nothing", kind: workflows.GatePlan, typed: "",
			err: "read answer"},
		{name: "free text at the policy gate rejects with it", kind: workflows.GatePolicy, typed: "no subprocesses\n",
			want: []sentSignal{{workflows.SignalReject, "no subprocesses"}}},
		{name: "enter at the plan gate asks again", kind: workflows.GatePlan, typed: "\ny\n",
			want: []sentSignal{{workflows.SignalApprove, "y"}}},
		{name: "n rejects", kind: workflows.GateBudget, typed: "n\n",
			want: []sentSignal{{workflows.SignalReject, "n"}}},
		{name: "free text at a stuck task is guidance", kind: workflows.GateStuck, typed: "add, don't subtract\n",
			want:   []sentSignal{{workflows.SignalFeedback, "add, don't subtract"}},
			screen: []string{"[other text] go on, with the text as guidance"}},
		{name: "an answer on the last line without a newline counts", kind: workflows.GatePlan, typed: "yes",
			want: []sentSignal{{workflows.SignalApprove, "yes"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var sig recordingAnswerer
			var screen strings.Builder
			err := answerGate(context.Background(), &sig, "task-1", gateWithAnswers(tt.kind),
				bufio.NewReader(strings.NewReader(tt.typed)), &screen)
			if tt.err == "" && err != nil {
				t.Fatalf("answerGate: %v\n%s", err, screen.String())
			}
			if tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
				t.Fatalf("answerGate error = %v, want one with %q", err, tt.err)
			}
			if !reflect.DeepEqual(sig.sent, tt.want) {
				t.Errorf("sent %+v, want %+v\n%s", sig.sent, tt.want, screen.String())
			}
			for _, s := range tt.screen {
				if !strings.Contains(screen.String(), s) {
					t.Errorf("screen lacks %q:\n%s", s, screen.String())
				}
			}
		})
	}
}

// scriptedClient answers status queries with its statuses in turn, one a
// query, then the last again; the task's result comes once all were seen.
type scriptedClient struct {
	*fakeClient
	seq    []workflows.Status
	served int
	seen   chan struct{} // closed once the last status was served
}

func newScriptedClient(id string, seq ...workflows.Status) *scriptedClient {
	c := &scriptedClient{fakeClient: newFakeClient(), seq: seq, seen: make(chan struct{})}
	c.statuses[id] = seq[0]
	return c
}

func (c *scriptedClient) Status(_ context.Context, id string) (workflows.Status, error) {
	if err := c.known(id); err != nil {
		return workflows.Status{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.seq[min(c.served, len(c.seq)-1)]
	if c.served++; c.served == len(c.seq) {
		close(c.seen)
	}
	return st, nil
}

func (c *scriptedClient) Wait(ctx context.Context, id string) (workflows.TaskResult, error) {
	select {
	case <-c.seen:
	case <-ctx.Done():
		return workflows.TaskResult{}, ctx.Err()
	}
	last := c.seq[len(c.seq)-1]
	return workflows.TaskResult{SnapshotID: "snap", Iterations: last.Iteration, Status: last}, nil
}

// runningTask is a one-step task as status queries see it while it runs:
// planned, three model turns of a budget of ten (the second and third
// paid for), the check, success.
func runningTask() []workflows.Status {
	base := workflows.Status{Task: "add two numbers", Language: "python", Plan: []string{"write add"},
		Step: 1, Iteration: 1, MaxIterations: 6, MaxTurns: 10, TestCmd: "pytest -q"}
	at := func(phase workflows.Phase, turn int, doing string, tokens int, usd float64) workflows.Status {
		st := base
		st.Phase, st.Turn, st.Doing = phase, turn, doing
		st.Usage = activities.Usage{PromptTokens: tokens * 3 / 4, CompletionTokens: tokens - tokens*3/4, CostUSD: usd}
		return st
	}
	planning := at(workflows.PhasePlanning, 0, "", 0, 0)
	planning.Plan, planning.Step = nil, 0
	return []workflows.Status{
		planning,
		at(workflows.PhaseGenerating, 1, "waiting for the model", 400, 0.0003),
		at(workflows.PhaseGenerating, 2, "waiting for the model", 1500, 0.0012),
		at(workflows.PhaseGenerating, 2, "waiting for the model", 2100, 0.0017), // paid, nothing else moved
		at(workflows.PhaseGenerating, 3, "run pytest -q", 3200, 0.0026),
		at(workflows.PhaseChecking, 3, "", 3200, 0.0026),
		at(workflows.PhaseSucceeded, 3, "", 3200, 0.0026),
	}
}

// barFill is how many eighths of its cells a drawn progress bar fills.
func barFill(t *testing.T, frame string) int {
	t.Helper()
	start, end := strings.Index(frame, "["), strings.Index(frame, "]")
	if start != 0 || end < 0 {
		t.Fatalf("frame does not start with a bar: %q", frame)
	}
	n := 0
	for _, r := range frame[start+1 : end] {
		switch i := strings.IndexRune(string(partialBlocks), r); {
		case r == '█':
			n += 8
		case i >= 0:
			n += utf8.RuneCountInString(string(partialBlocks)[:i]) + 1
		}
	}
	return n
}

// TestProgressMovesWhileATaskRuns: on a terminal the bar fills turn by
// turn within the task's one step, before anything is done; piped, each
// line carries the tokens and cost so far, a new line when they change.
func TestProgressMovesWhileATaskRuns(t *testing.T) {
	t.Run("terminal", func(t *testing.T) {
		c := newScriptedClient("t1", runningTask()...)
		f, _, errOut := fakeFactory(t, c.fakeClient)
		f.TaskClient = func(context.Context) (TaskClient, error) { return c, nil }
		f.IO.ErrTTY = true
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if code := execute(ctx, f, []string{"watch", "t1"}); code != exitOK {
			t.Fatalf("watch: exit %d\n%s", code, errOut.String())
		}
		var fills []int
		for _, frame := range strings.Split(errOut.String(), "\r\033[K") {
			if strings.HasPrefix(frame, "[") && (strings.Contains(frame, "[generating]") || strings.Contains(frame, "[checking]")) {
				fills = append(fills, barFill(t, frame))
			}
		}
		t.Logf("bar fills: %v", fills)
		if len(fills) < 4 {
			t.Fatalf("%d frames while the step ran, want 4 or more:\n%q", len(fills), errOut.String())
		}
		for i := 1; i < len(fills); i++ {
			if fills[i] < fills[i-1] {
				t.Errorf("the bar went back from %d to %d eighths: %v", fills[i-1], fills[i], fills)
			}
		}
		if fills[0] == 0 || fills[len(fills)-1] <= fills[0] || fills[len(fills)-1] >= 160 {
			t.Errorf("bar fills %v (eighths of 20 cells): want it to start moving at the first turn, "+
				"grow by the check and stay short of full until the task is done", fills)
		}
	})
	t.Run("piped", func(t *testing.T) {
		c := newScriptedClient("t1", runningTask()...)
		f, out, errOut := fakeFactory(t, c.fakeClient)
		f.TaskClient = func(context.Context) (TaskClient, error) { return c, nil }
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if code := execute(ctx, f, []string{"watch", "t1"}); code != exitOK {
			t.Fatalf("watch: exit %d\n%s", code, errOut.String())
		}
		want := []string{
			"[planning]",
			"[generating] step 1/1 · iteration 1/6 · turn 1: waiting for the model · 400 tokens · cost $0.0003",
			"[generating] step 1/1 · iteration 1/6 · turn 2: waiting for the model · 1.5k tokens · cost $0.0012",
			"[generating] step 1/1 · iteration 1/6 · turn 2: waiting for the model · 2.1k tokens · cost $0.0017",
			"[generating] step 1/1 · iteration 1/6 · turn 3: run pytest -q · 3.2k tokens · cost $0.0026",
			"[checking] step 1/1 · iteration 1/6 · turn 3 · 3.2k tokens · cost $0.0026",
			"[succeeded] step 1/1 · iteration 1/6 · 3.2k tokens · cost $0.0026",
		}
		got := strings.Split(strings.TrimRight(errOut.String(), "\n"), "\n")
		if !reflect.DeepEqual(got, want) {
			t.Errorf("piped progress:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		if !strings.Contains(out.String(), "tokens: 2400 in, 800 out, cost $0.0026") {
			t.Errorf("stdout lacks the final tokens:\n%s", out.String())
		}
	})
}

// TestProgressOfAStep: a later step starts where the earlier ones end; a
// gate after the check keeps the bar where the check put it; a failed
// check's retry starts the step again.
func TestProgressOfAStep(t *testing.T) {
	st := func(phase workflows.Phase, step, iteration, turn int) workflows.Status {
		return workflows.Status{Phase: phase, Plan: []string{"a", "b"}, Step: step, Iteration: iteration, Turn: turn, MaxTurns: 4}
	}
	v := newView(io.Discard, true)
	for _, tc := range []struct {
		name string
		st   workflows.Status
		want float64
	}{
		{"planning", workflows.Status{Phase: workflows.PhasePlanning}, 0},
		{"first turn of step 1", st(workflows.PhaseGenerating, 1, 1, 1), 0.1},
		{"step 1 checked", st(workflows.PhaseChecking, 1, 1, 2), 0.4},
		{"policy gate after the check", st(workflows.PhaseWaiting, 1, 1, 2), 0.4},
		{"retry after a failed check", st(workflows.PhaseReflecting, 1, 2, 0), 0},
		{"first turn of step 2", st(workflows.PhaseGenerating, 2, 3, 1), 0.6},
		{"done", st(workflows.PhaseSucceeded, 2, 3, 3), 1},
	} {
		if got := v.progress(tc.st); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s: progress %.3f, want %.3f", tc.name, got, tc.want)
		}
	}
}
