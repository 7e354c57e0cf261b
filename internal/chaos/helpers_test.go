package chaos

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/autocoder/autocoder/internal/devserver"
	"github.com/autocoder/autocoder/internal/llmtest"
	"github.com/autocoder/autocoder/internal/store"
	"github.com/autocoder/autocoder/internal/taskclient"
	"github.com/autocoder/autocoder/internal/testenv"
	"github.com/autocoder/autocoder/workflows"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testenv.Cleanup()
	os.Exit(code)
}

// workerEnv is what a worker process needs besides the store: Temporal, the
// scripted model and the docker sandbox (no silent fallback to bwrap, whose
// runs would leave no containers to count).
func workerEnv(temporalAddr, namespace, dataDir, modelURL string, extra ...string) []string {
	return testenv.ClusterEnv(temporalAddr, namespace, dataDir, modelURL, append([]string{"AUTOCODER_SANDBOX=docker"}, extra...)...)
}

// startTemporal starts the embedded Temporal server of local mode and
// dials it; both end with the test.
func startTemporal(ctx context.Context, t *testing.T, opts devserver.Options) (*devserver.Server, client.Client) {
	t.Helper()
	srv, err := devserver.Start(ctx, opts)
	if err != nil {
		t.Fatalf("start temporal: %v", err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	c, err := client.DialContext(ctx, client.Options{HostPort: srv.FrontendAddress(), Namespace: srv.Namespace()})
	if err != nil {
		t.Fatalf("dial temporal: %v", err)
	}
	t.Cleanup(c.Close)
	return srv, c
}

func requireDocker(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "docker", "info", "--format", "{{.ServerVersion}}").CombinedOutput()
	if err != nil {
		err = fmt.Errorf("%w: %s", err, bytes.TrimSpace(out))
	}
	testenv.RequireService(t, "docker", err)
}

// planMarker is in the plan prompt the activities build
// (activities/prompts.go); workflows.RetryMarker starts the message that
// tells an attempt's conversation its check failed.
const planMarker = "Write a short plan"

var taskRE = regexp.MustCompile(`Chaos task (\d+):`)

// taskText is the task numbered n; the number routes the scripted answers
// and names the files, so every task's result is distinct.
func taskText(n int) string {
	return fmt.Sprintf("Chaos task %d: write a function add(a, b) in calc_%d.py that returns the sum, with pytest tests.", n, n)
}

// taskNumber finds the chaos task number in a request's user messages: a
// retry's last message is the failure report, the task is in the first.
func taskNumber(req llmtest.ChatRequest) (int, bool) {
	for _, m := range req.Messages {
		if m.Role != "user" {
			continue
		}
		if sub := taskRE.FindStringSubmatch(m.Content); sub != nil {
			n, _ := strconv.Atoi(sub[1])
			return n, true
		}
	}
	return 0, false
}

// wantFiles is the exact final workspace of task n.
func wantFiles(n int) map[string]string {
	return map[string]string{
		fmt.Sprintf("calc_%d.py", n):      fmt.Sprintf("# task %d\ndef add(a, b):\n    return a + b\n", n),
		fmt.Sprintf("test_calc_%d.py", n): fmt.Sprintf("from calc_%d import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n", n),
	}
}

func fence(path, body string) string { return "```path=" + path + "\n" + body + "```\n" }

// delays hold model answers back per kind of call: the plan, an attempt's
// first turn, and the turn that answers a failed check.
type delays struct{ plan, generate, retry time.Duration }

// isRetry reports whether the request answers a failed check: its last
// user message is the failure report.
func isRetry(req llmtest.ChatRequest) bool {
	return strings.HasPrefix(req.LastUser(), workflows.RetryMarker)
}

// taskScript answers the plan and the attempts' turns of numbered tasks,
// in plain text with fenced file blocks, which end an attempt. With
// buggyFirst the first code subtracts, the tests catch it, and the turn
// that hears of the failure names the cause and answers with the right
// code; otherwise the first code passes.
func taskScript(buggyFirst bool, d delays) llmtest.Script {
	return func(req llmtest.ChatRequest) llmtest.Reply {
		n, ok := taskNumber(req)
		if !ok {
			return llmtest.Reply{Status: http.StatusBadRequest, Content: "no chaos task number in the prompt"}
		}
		files := wantFiles(n)
		calc, test := fmt.Sprintf("calc_%d.py", n), fmt.Sprintf("test_calc_%d.py", n)
		last := req.LastUser()
		switch {
		case strings.Contains(last, planMarker):
			return llmtest.Reply{Delay: d.plan, Content: fmt.Sprintf("1. Implement add in %s with pytest tests in %s.", calc, test)}
		case isRetry(req):
			if !strings.Contains(last, "assert") {
				return llmtest.Fail("the failure report does not show the failed assertion: %q", last)
			}
			return llmtest.Reply{Delay: d.retry, Content: fmt.Sprintf(
				"Root cause: add subtracts b instead of adding it (%s line 3). Fix: return a + b.\n\n", calc) +
				fence(calc, files[calc]) + fence(test, files[test])}
		case !buggyFirst:
			return llmtest.Reply{Delay: d.generate, Content: fence(calc, files[calc]) + fence(test, files[test])}
		default:
			buggy := strings.Replace(files[calc], "a + b", "a - b", 1)
			return llmtest.Reply{Delay: d.generate, Content: "Here is the code.\n\n" + fence(calc, buggy) + fence(test, files[test])}
		}
	}
}

// modelCall is one request the scripted model received.
type modelCall = llmtest.TimedCall

// newModelServer serves a script on this machine and records every call
// with its chaos task number.
func newModelServer(t *testing.T, script llmtest.Script) *llmtest.TimedServer {
	t.Helper()
	return llmtest.NewTimed(t, nil, taskRE, script)
}

// isSandboxActivity says whether an activity type runs in the sandbox:
// the check, its execution after a person's approval, and tool calls run
// there.
func isSandboxActivity(typ string) bool {
	return typ == "Check" || typ == "Execute" || typ == "SandboxCall"
}

// isStoreActivity says whether an activity type only reads and writes the
// store: an attempt's opening, its conversation's writes, an answer's files
// applied, and lessons saved.
func isStoreActivity(typ string) bool {
	return typ == "OpenStep" || typ == "AppendMessages" || typ == "ApplyAnswer" || typ == "SaveLessons"
}

// vmHWM is the peak resident set size of a running process, from /proc.
func vmHWM(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("read proc status: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("parse VmHWM %q: %w", rest, err)
			}
			return kb << 10, nil
		}
	}
	return 0, errors.New("no VmHWM in proc status")
}

// leakedContainers lists sandbox containers, running or not, that belong
// to the given owners ("host/pid", which the label extends with the
// process's start time). Filtering by owner keeps other users' runs out.
func leakedContainers(ctx context.Context, owners []string) ([]string, error) {
	out, err := exec.CommandContext(ctx, "docker", "ps", "-a", "--filter", "label=autocoder.sandbox=1",
		"--format", `{{.ID}} {{.Label "autocoder.sandbox.owner"}}`).Output()
	if err != nil {
		return nil, fmt.Errorf("docker ps: %w", err)
	}
	var ids []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		id, owner, _ := strings.Cut(line, " ")
		for _, o := range owners {
			if owner == o || strings.HasPrefix(owner, o+"/") {
				ids = append(ids, id)
				break
			}
		}
	}
	return ids, nil
}

// tasks reaches the tasks through c; the tests list none, so the
// namespace New takes for listing is not needed.
func tasks(c client.Client) *taskclient.Client { return taskclient.New(c, "") }

// startTask starts task n directly through the Temporal client, as
// `autocoder run --detach` does; searchAttrs says the namespace has the
// custom search attributes, which the task then keeps current.
func startTask(ctx context.Context, c client.Client, prefix string, n, maxIterations int, searchAttrs bool) (string, error) {
	id := fmt.Sprintf("%s-%d", prefix, n)
	_, err := tasks(c).Start(ctx, workflows.TaskInput{Task: taskText(n), Language: "python", MaxIterations: maxIterations,
		SearchAttributes: searchAttrs}, taskclient.StartOptions{ID: id})
	if err != nil {
		return "", fmt.Errorf("start task %d: %w", n, err)
	}
	return id, nil
}

// waitDone waits for a task to close and returns its result. It polls
// rather than long-polls so a Temporal restart is ridden out.
func waitDone(ctx context.Context, c client.Client, id string) (workflows.TaskResult, error) {
	for {
		d, err := tasks(c).Describe(ctx, id)
		if err == nil && d.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
			break
		}
		select {
		case <-ctx.Done():
			return workflows.TaskResult{}, fmt.Errorf("wait for %s: %w (last describe error: %v)", id, ctx.Err(), err)
		case <-time.After(300 * time.Millisecond):
		}
	}
	res, err := tasks(c).Wait(ctx, id)
	if err != nil {
		return res, fmt.Errorf("task %s: %w", id, err)
	}
	return res, nil
}

// pendingStarted lists the activity types of a task that a worker started
// at or after since and that have not finished.
func pendingStarted(ctx context.Context, c client.Client, id string, since time.Time) ([]string, error) {
	d, err := tasks(c).Describe(ctx, id)
	if err != nil {
		return nil, err
	}
	var types []string
	for _, pa := range d.GetPendingActivities() {
		if pa.GetState() == enumspb.PENDING_ACTIVITY_STATE_STARTED && !pa.GetLastStartedTime().AsTime().Before(since) {
			types = append(types, pa.GetActivityType().GetName())
		}
	}
	return types, nil
}

// activityRun is one activity of a task's history, scheduled to closed.
type activityRun struct {
	Type                string
	Scheduled, Finished time.Time
	Started             time.Time // of the last attempt, the one that completed
	Attempt             int32
}

// taskHistory is what the benchmark and the chaos test read from a task's
// history: its span and its completed activities.
type taskHistory struct {
	Start, End time.Time
	Activities []activityRun
	// WorkflowTasks are the task's completed workflow tasks: Scheduled is
	// when the server queued one, Started when a worker took it, Finished
	// when the worker's answer arrived.
	WorkflowTasks []activityRun
}

// completionsAfter returns the first activity completion after t.
func (h taskHistory) completionAfter(t time.Time) (time.Time, bool) {
	for _, a := range h.Activities {
		if a.Finished.After(t) {
			return a.Finished, true
		}
	}
	return time.Time{}, false
}

func loadHistory(ctx context.Context, c client.Client, id string) (taskHistory, error) {
	var h taskHistory
	scheduled := map[int64]activityRun{}
	var wft activityRun
	events, err := tasks(c).History(ctx, id)
	if err != nil {
		return h, err
	}
	for _, ev := range events {
		at := ev.GetEventTime().AsTime()
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
			h.Start = at
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED:
			h.End = at
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			scheduled[ev.GetEventId()] = activityRun{
				Type:      ev.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName(),
				Scheduled: at,
			}
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
			attrs := ev.GetActivityTaskStartedEventAttributes()
			a := scheduled[attrs.GetScheduledEventId()]
			a.Started, a.Attempt = at, attrs.GetAttempt()
			scheduled[attrs.GetScheduledEventId()] = a
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
			a := scheduled[ev.GetActivityTaskCompletedEventAttributes().GetScheduledEventId()]
			a.Finished = at
			h.Activities = append(h.Activities, a)
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED:
			wft = activityRun{Type: "workflow task", Scheduled: at}
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED:
			wft.Started = at
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
			wft.Finished = at
			h.WorkflowTasks = append(h.WorkflowTasks, wft)
		}
	}
	return h, nil
}

// checkSnapshot compares a task's final snapshot with its expected files.
func checkSnapshot(ctx context.Context, st store.Store, n int, snapshot string) error {
	files, err := st.GetSnapshot(ctx, snapshot)
	if err != nil {
		return fmt.Errorf("task %d: read snapshot %s: %w", n, snapshot, err)
	}
	want := wantFiles(n)
	got := map[string]string{}
	for _, f := range files {
		got[f.Path] = string(f.Data)
	}
	if len(got) != len(want) {
		return fmt.Errorf("task %d: snapshot has files %v, want %d files", n, keys(got), len(want))
	}
	for path, body := range want {
		if got[path] != body {
			return fmt.Errorf("task %d: %s is\n%q\nwant\n%q", n, path, got[path], body)
		}
	}
	return nil
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// percentile is the nearest-rank percentile of ds (p in 0..100).
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(float64(len(s))*p/100+0.999999) - 1
	return s[min(max(i, 0), len(s)-1)]
}
