package workflows

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/autocoder/autocoder/activities"
	"github.com/autocoder/autocoder/internal/notify"
	"github.com/autocoder/autocoder/internal/store"
)

// onNotify has the task's two webhooks take every event; the second one
// always fails. It returns the messages the first one was sent.
func (s *codingTaskSuite) onNotify() *[]notify.Message {
	s.env.RegisterWorkflowWithOptions(Notification, NotificationRegisterOptions())
	s.env.OnActivity(a.NotifyTargets, mock.Anything, mock.Anything).Return([]int{0, 1}, nil)
	var mu sync.Mutex
	var sent []notify.Message
	s.env.OnActivity(a.Notify, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.NotifyInput) error {
		if in.Target == 1 {
			return temporal.NewNonRetryableApplicationError("json webhook at 127.0.0.1:9 answered HTTP 404", activities.ErrTypeWebhookRefused, nil)
		}
		mu.Lock()
		defer mu.Unlock()
		sent = append(sent, in.Message)
		return nil
	})
	return &sent
}

// TestNotifiesAtTheGateAndTheEnd: the plan gate and the success are sent,
// with the task's id, the question and the answers; a webhook that fails
// every time does not fail the task.
func (s *codingTaskSuite) TestNotifiesAtTheGateAndTheEnd() {
	sent := s.onNotify()
	s.onPlan("step one")
	s.passEverything("s1")
	s.at(time.Minute, s.signal(SignalApprove, ApproveSignal{}))
	in := input
	in.ApprovePlan, in.Notify = true, "notify/0123"
	s.env.ExecuteWorkflow(CodingTask, in)
	s.NoError(s.env.GetWorkflowError())

	s.Require().Len(*sent, 2, "messages to the working webhook")
	gate, end := (*sent)[0], (*sent)[1]
	s.Equal(notify.EventGate, gate.Event)
	s.Equal(GatePlan, gate.Gate)
	s.Equal("Approve this plan?", gate.Question)
	s.Contains(gate.Details, "1. step one")
	s.Equal(input.Task, gate.Task)
	s.NotEmpty(gate.TaskID)
	s.Require().NotEmpty(gate.Answers)
	s.Equal(SignalApprove, gate.Answers[0].Signal)
	s.Equal(notify.EventSucceeded, end.Event)
	s.Contains(end.Result, "1 plan step(s) done in 1 iteration(s)")
}

// TestNotifiesTheFailure: a task that runs out of iterations says why.
func (s *codingTaskSuite) TestNotifiesTheFailure() {
	sent := s.onNotify()
	s.onPlan("step")
	s.onAttempt("s1")
	s.onCheck("s1", failing)
	in := input
	in.MaxIterations, in.Notify = 1, "notify/0123"
	s.env.ExecuteWorkflow(CodingTask, in)
	s.requireAppError(ErrTypeIterationsExhausted)
	s.Require().Len(*sent, 1)
	s.Equal(notify.EventFailed, (*sent)[0].Event)
	s.Contains((*sent)[0].Result, "no passing attempt after 1 iterations")
}

// TestNoWebhooksNoNotification: without webhooks nothing is scheduled (no
// NotifyTargets is expected: one would fail the test).
func (s *codingTaskSuite) TestNoWebhooksNoNotification() {
	s.env.RegisterWorkflowWithOptions(Notification, NotificationRegisterOptions())
	s.onPlan("step")
	s.passEverything("s1")
	in := input
	in.ApprovePlan = true
	s.at(time.Minute, s.signal(SignalApprove, ApproveSignal{}))
	s.env.ExecuteWorkflow(CodingTask, in)
	s.NoError(s.env.GetWorkflowError())
}

// TestNotifiesTheWorkersWebhooks: a task without webhooks of its own asks
// the workers once whether they have some, and tells theirs at the gate
// and the end; a task with its own tells both.
func (s *codingTaskSuite) TestNotifiesTheWorkersWebhooks() {
	s.env.RegisterWorkflowWithOptions(Notification, NotificationRegisterOptions())
	s.env.OnActivity(a.WorkerWebhooks, mock.Anything).Return("worker-notify-0a1b", nil).Once()
	s.env.OnActivity(a.WorkerNotifyTargets, mock.Anything, mock.Anything).Return([]string{"0a1b2c3d4e5f6a7b"}, nil)
	var mu sync.Mutex
	var sent []activities.NotifyInput
	s.env.OnActivity(a.Notify, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.NotifyInput) error {
		mu.Lock()
		defer mu.Unlock()
		sent = append(sent, in)
		return nil
	})
	s.onPlan("step one")
	s.passEverything("s1")
	s.at(time.Minute, s.signal(SignalApprove, ApproveSignal{}))
	in := input
	in.ApprovePlan = true
	s.env.ExecuteWorkflow(CodingTask, in)
	s.NoError(s.env.GetWorkflowError())

	s.Require().Len(sent, 2, "messages to the worker's webhook")
	for i, want := range []notify.Event{notify.EventGate, notify.EventSucceeded} {
		s.Equal(want, sent[i].Message.Event)
		s.Equal("0a1b2c3d4e5f6a7b", sent[i].WorkerTarget, "the worker's webhook")
		s.Empty(sent[i].Ref)
	}
}

// TestNotifiesBothWebhooks: a task with webhooks of its own, run by
// workers with theirs, tells both.
func (s *codingTaskSuite) TestNotifiesBothWebhooks() {
	own := s.onNotify()
	s.env.OnActivity(a.WorkerWebhooks, mock.Anything).Return("worker-notify-0a1b", nil).Once()
	s.env.OnActivity(a.WorkerNotifyTargets, mock.Anything, activities.NotifyTargetsInput{Ref: "notify/0123", Event: notify.EventSucceeded}).Return([]string{"0a1b2c3d4e5f6a7b"}, nil).Once()
	s.onPlan("step")
	s.passEverything("s1")
	in := input
	in.Notify = "notify/0123"
	s.env.ExecuteWorkflow(CodingTask, in)
	s.NoError(s.env.GetWorkflowError())
	// The task's working webhook, and the worker's (onNotify's Notify
	// records every message to a target 0).
	s.Len(*own, 2)
}

// TestNotificationRetries runs the Notification workflow with the real
// activities, a real store and a local webhook: a 500 is retried until the
// webhook takes the message, a 400 is tried once, and neither fails the
// workflow.
func TestNotificationRetries(t *testing.T) {
	for _, c := range []struct {
		name     string
		statuses []int
		tries    int
	}{
		{"500 then 200", []int{500, 500, 200}, 3},
		{"400", []int{400}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			var mu sync.Mutex
			tries := 0
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				mu.Lock()
				defer mu.Unlock()
				w.WriteHeader(c.statuses[min(tries, len(c.statuses)-1)])
				tries++
			}))
			defer srv.Close()
			st, err := store.OpenSQLite(context.Background(), t.TempDir()+"/s.db")
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			ref, err := notify.Save(context.Background(), st, notify.Record{Targets: []notify.Target{{URL: srv.URL + "/hook", Format: notify.FormatSlack}}})
			if err != nil {
				t.Fatal(err)
			}
			var suite testsuite.WorkflowTestSuite
			env := suite.NewTestWorkflowEnvironment()
			env.RegisterWorkflowWithOptions(Notification, NotificationRegisterOptions())
			env.RegisterActivity(&activities.Activities{Store: st, Webhooks: notify.NewClient(time.Second)})
			env.ExecuteWorkflow(Notification, NotificationInput{Ref: ref, Message: notify.Message{TaskID: "t", Event: notify.EventFailed, Result: "boom"}})
			if err := env.GetWorkflowError(); err != nil {
				t.Fatalf("workflow failed: %v", err)
			}
			mu.Lock()
			defer mu.Unlock()
			if tries != c.tries {
				t.Errorf("webhook tried %d times, want %d", tries, c.tries)
			}
		})
	}
}
