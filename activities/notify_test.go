package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/autocoder/autocoder/internal/notify"
	"github.com/autocoder/autocoder/internal/store"
)

// receiver is a local webhook: it records each body it is sent and
// answers with the next of its statuses (the last one repeats).
type receiver struct {
	*httptest.Server
	mu       sync.Mutex
	bodies   [][]byte
	statuses []int
}

func newReceiver(t *testing.T, statuses ...int) *receiver {
	r := &receiver{statuses: statuses}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.bodies = append(r.bodies, body)
		status := r.statuses[min(len(r.bodies), len(r.statuses))-1]
		r.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) received() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]byte(nil), r.bodies...)
}

// notifyEnv is an activity environment with a real store holding targets.
func notifyEnv(t *testing.T, timeout time.Duration, targets ...notify.Target) (*testsuite.TestActivityEnvironment, *Activities, string) {
	t.Helper()
	st, err := store.OpenSQLite(context.Background(), t.TempDir()+"/a.db")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ref, err := notify.Save(context.Background(), st, notify.Record{Targets: targets, Link: "http://ui/t-1"})
	if err != nil {
		t.Fatal(err)
	}
	acts := &Activities{Store: st, Webhooks: notify.NewClient(timeout)}
	var s testsuite.WorkflowTestSuite
	tenv := s.NewTestActivityEnvironment()
	tenv.RegisterActivity(acts)
	return tenv, acts, ref
}

var gateMsg = notify.Message{TaskID: "t-1", Event: notify.EventGate, Task: "add <b>", Gate: "plan", Question: "Approve this plan?",
	Answers: []notify.Answer{{Words: []string{"y"}, Signal: "approve", Means: "approve"}}}

// TestNotifyEachFormat: each format reaches a real receiver with its own
// shape, the link from the record.
func TestNotifyEachFormat(t *testing.T) {
	for _, c := range []struct {
		format notify.Format
		check  func(map[string]any) bool
	}{
		{notify.FormatJSON, func(b map[string]any) bool {
			return b["taskId"] == "t-1" && b["event"] == "gate" && b["link"] == "http://ui/t-1"
		}},
		{notify.FormatSlack, func(b map[string]any) bool {
			return b["text"] != nil && len(b["blocks"].([]any)) > 0 && strings.Contains(fmt.Sprint(b), "add &lt;b&gt;")
		}},
		{notify.FormatDiscord, func(b map[string]any) bool {
			return strings.Contains(b["content"].(string), "Approve this plan?") && b["allowed_mentions"] != nil
		}},
	} {
		t.Run(string(c.format), func(t *testing.T) {
			r := newReceiver(t, 200)
			tenv, acts, ref := notifyEnv(t, time.Second, notify.Target{URL: r.URL + "/hook", Format: c.format})
			if _, err := tenv.ExecuteActivity(acts.Notify, NotifyInput{Ref: ref, Target: 0, Message: gateMsg}); err != nil {
				t.Fatal(err)
			}
			got := r.received()
			var body map[string]any
			if len(got) != 1 || json.Unmarshal(got[0], &body) != nil || !c.check(body) {
				t.Errorf("receiver got %q", got)
			}
		})
	}
}

// TestNotifyFailures: a 500 and a 429 are retryable (the 429 with the
// delay it asked for), a 400 is not, and no error shows the URL.
func TestNotifyFailures(t *testing.T) {
	for _, c := range []struct {
		name      string
		status    int
		retryable bool
	}{
		{"server error", 500, true},
		{"too many requests", 429, true},
		{"bad request", 400, false},
		{"not found", 404, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newReceiver(t, c.status)
			tenv, acts, ref := notifyEnv(t, time.Second, notify.Target{URL: r.URL + "/hook/s3cr3t", Format: notify.FormatJSON})
			_, err := tenv.ExecuteActivity(acts.Notify, NotifyInput{Ref: ref, Message: gateMsg})
			var app *temporal.ApplicationError
			if !errors.As(err, &app) || app.NonRetryable() == c.retryable {
				t.Fatalf("Notify = %v, want an error retryable=%v", err, c.retryable)
			}
			if !c.retryable && app.Type() != ErrTypeWebhookRefused {
				t.Errorf("type %s, want %s", app.Type(), ErrTypeWebhookRefused)
			}
			if strings.Contains(err.Error(), "s3cr3t") {
				t.Errorf("error shows the URL: %v", err)
			}
		})
	}
}

// TestNotifyDeadEndpoints: a closed port and a server that never answers
// both fail a try within the client's bound, retryably.
func TestNotifyDeadEndpoints(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String() + "/hook"
	l.Close()
	release := make(chan struct{})
	hanging := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-release }))
	defer hanging.Close()
	defer close(release)
	for name, u := range map[string]string{"closed port": closed, "hanging": hanging.URL + "/hook"} {
		t.Run(name, func(t *testing.T) {
			tenv, acts, ref := notifyEnv(t, 300*time.Millisecond, notify.Target{URL: u, Format: notify.FormatSlack})
			start := time.Now()
			_, err := tenv.ExecuteActivity(acts.Notify, NotifyInput{Ref: ref, Message: gateMsg})
			var app *temporal.ApplicationError
			if !errors.As(err, &app) || app.NonRetryable() {
				t.Fatalf("Notify = %v, want a retryable error", err)
			}
			if took := time.Since(start); took > 3*time.Second {
				t.Errorf("took %s, want about the 300ms bound", took)
			}
		})
	}
}

// TestNotifyTargets: only the webhooks that want the event; an unknown
// record is not retried.
func TestNotifyTargets(t *testing.T) {
	tenv, acts, ref := notifyEnv(t, time.Second,
		notify.Target{URL: "http://a/x", Format: notify.FormatJSON, Events: []notify.Event{notify.EventFailed}},
		notify.Target{URL: "http://b/x", Format: notify.FormatJSON},
		notify.Target{URL: "http://c/x", Format: notify.FormatJSON, Events: []notify.Event{notify.EventGate, notify.EventSucceeded}},
	)
	v, err := tenv.ExecuteActivity(acts.NotifyTargets, NotifyTargetsInput{Ref: ref, Event: notify.EventGate})
	var got []int
	if err != nil || v.Get(&got) != nil || len(got) != 2 || got[0] != 1 || got[1] != 2 {
		t.Errorf("NotifyTargets(gate) = %v, %v; want [1 2]", got, err)
	}
	_, err = tenv.ExecuteActivity(acts.NotifyTargets, NotifyTargetsInput{Ref: "notify/none", Event: notify.EventGate})
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || !app.NonRetryable() {
		t.Errorf("unknown record: %v, want a non-retryable error", err)
	}
}

// TestWorkerNotify: the worker's own webhooks that want the event, but
// those the task names itself for it, are told by a name that does not
// depend on their place, with the worker's link for the task; a worker
// without webhooks gives no key, one without the webhook named has the
// delivery retried (another worker may have it).
func TestWorkerNotify(t *testing.T) {
	r := newReceiver(t, http.StatusOK)
	tenv, acts, ref := notifyEnv(t, time.Second,
		notify.Target{URL: "http://shared/x", Format: notify.FormatJSON},
		notify.Target{URL: "http://failures/x", Format: notify.FormatJSON, Events: []notify.Event{notify.EventFailed}})
	v, err := tenv.ExecuteActivity(acts.WorkerWebhooks)
	var key string
	if err != nil || v.Get(&key) != nil || key != "" {
		t.Errorf("a worker without webhooks: key %q, %v; want none", key, err)
	}
	mine := notify.Target{URL: r.URL + "/hook", Format: notify.FormatJSON}
	failures := notify.Target{URL: "http://c/x", Format: notify.FormatJSON, Events: []notify.Event{notify.EventFailed}}
	shared := notify.Target{URL: "http://shared/x", Format: notify.FormatJSON}
	alsoTasks := notify.Target{URL: "http://failures/x", Format: notify.FormatJSON}
	acts.WorkerNotify = WorkerNotify{
		Targets: []notify.Target{mine, shared, failures, alsoTasks},
		Link:    func(id string) string { return "http://ui.example/workflows/" + id },
	}
	v, err = tenv.ExecuteActivity(acts.WorkerWebhooks)
	if err != nil || v.Get(&key) != nil || !strings.HasPrefix(key, "worker-notify-") {
		t.Errorf("a worker with webhooks: key %q, %v", key, err)
	}
	targets := func(in NotifyTargetsInput) []string {
		t.Helper()
		var got []string
		v, err := tenv.ExecuteActivity(acts.WorkerNotifyTargets, in)
		if err != nil || v.Get(&got) != nil {
			t.Fatalf("WorkerNotifyTargets: %v", err)
		}
		return got
	}
	// The shared webhook is the task's for every event; the one the task
	// has for failures only is the worker's at a gate.
	if got, want := targets(NotifyTargetsInput{Ref: ref, Event: notify.EventGate}), []string{workerTargetID(mine), workerTargetID(alsoTasks)}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("WorkerNotifyTargets(gate) = %v, want %v", got, want)
	}
	if got := targets(NotifyTargetsInput{Event: notify.EventFailed}); len(got) != 4 {
		t.Errorf("WorkerNotifyTargets(failed) of a task without webhooks = %v, want all four", got)
	}
	if got := targets(NotifyTargetsInput{Ref: "notify/gone", Event: notify.EventGate}); len(got) != 3 {
		t.Errorf("WorkerNotifyTargets(gate) with the task's record gone = %v, want the three that want it", got)
	}
	if _, err := tenv.ExecuteActivity(acts.Notify, NotifyInput{WorkerTarget: workerTargetID(mine), Message: gateMsg}); err != nil {
		t.Fatal(err)
	}
	bodies := r.received()
	if len(bodies) != 1 || !strings.Contains(string(bodies[0]), `"link":"http://ui.example/workflows/t-1"`) {
		t.Errorf("the worker's webhook was sent %q, want one message with the worker's link", bodies)
	}
	_, err = tenv.ExecuteActivity(acts.Notify, NotifyInput{WorkerTarget: "0123456789abcdef", Message: gateMsg})
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.NonRetryable() || !strings.Contains(err.Error(), "no webhook 0123456789abcdef") {
		t.Errorf("a webhook this worker lacks: %v, want a retryable error", err)
	}
}
