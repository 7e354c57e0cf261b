package workflows

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/autocoder/autocoder/activities"
	"github.com/autocoder/autocoder/internal/policy"
)

// at runs fn once the workflow has been waiting for d of workflow time.
func (s *codingTaskSuite) at(d time.Duration, fn func()) { s.env.RegisterDelayedCallback(fn, d) }

func (s *codingTaskSuite) signal(name string, payload any) func() {
	return func() { s.env.SignalWorkflow(name, payload) }
}

func (s *codingTaskSuite) passEverything(snapshot string) {
	s.onAttempt(snapshot)
	s.env.OnActivity(a.Check, mock.Anything, mock.Anything).Return(passing, nil).Once()
}

// retryHeard returns the message the retry of the step was told.
func (s *codingTaskSuite) retryHeard() string {
	for _, in := range s.appended {
		if len(in.Messages) == 1 && in.Messages[0].Role == "user" {
			return in.Messages[0].Text
		}
	}
	s.Fail("no retry message was appended")
	return ""
}

func (s *codingTaskSuite) requireAppError(wantType string) *temporal.ApplicationError {
	err := s.env.GetWorkflowError()
	s.Require().Error(err)
	var app *temporal.ApplicationError
	s.Require().True(errors.As(err, &app), "want an application error, got %v", err)
	s.Equal(wantType, app.Type(), app.Message())
	return app
}

func (s *codingTaskSuite) TestPlanGateApproved() {
	s.onPlan("step one", "step two")
	s.onAttempt("s1")
	s.env.OnActivity(a.Check, mock.Anything, mock.Anything).Return(passing, nil).Twice()
	s.onAttempt("s2")
	s.at(time.Minute, func() {
		st := s.queryStatus()
		s.Equal(PhaseWaiting, st.Phase)
		s.Require().NotNil(st.Pending)
		s.Equal(GatePlan, st.Pending.Kind)
		s.Contains(st.Pending.Details, "2. step two")
		s.env.SignalWorkflow(SignalApprove, ApproveSignal{})
	})

	in := input
	in.ApprovePlan = true
	s.env.ExecuteWorkflow(CodingTask, in)
	s.NoError(s.env.GetWorkflowError())
}

func (s *codingTaskSuite) TestPlanGateRejectedReplansWithTheReason() {
	s.onPlan("use os.system")
	s.env.OnActivity(a.Plan, mock.Anything, mock.MatchedBy(func(in activities.PlanInput) bool {
		return len(in.Guidance) == 1 && in.Guidance[0] == "The previous plan was rejected: no shelling out"
	})).Return(activities.PlanOutput{Steps: []string{"pure python"}}, nil).Once()
	s.passEverything("s1")
	s.at(time.Minute, s.signal(SignalReject, RejectSignal{Reason: "no shelling out"}))
	s.at(2*time.Minute, s.signal(SignalApprove, ApproveSignal{}))

	in := input
	in.ApprovePlan = true
	s.env.ExecuteWorkflow(CodingTask, in)
	s.NoError(s.env.GetWorkflowError())
}

func (s *codingTaskSuite) TestPlanGateTimesOut() {
	s.env.OnActivity(a.Plan, mock.Anything, mock.Anything).Return(activities.PlanOutput{Steps: []string{"x"}}, nil).Times(maxPlanRejections)
	in := input
	in.ApprovePlan = true
	in.ApprovalTimeout = time.Hour
	s.env.ExecuteWorkflow(CodingTask, in)
	app := s.requireAppError(ErrTypePlanRejected)
	s.Contains(app.Message(), "no answer within 1h0m0s")
}

var policyFinding = activities.TestSummary{Stage: "validate", ExitCode: 1, PolicyOnly: true, Output: "main.py:3: [process] subprocess.run"}

func (s *codingTaskSuite) TestPolicyAskApprovedRunsTheCode() {
	s.onPlan("step")
	s.onAttempt("s1")
	s.env.OnActivity(a.Check, mock.Anything, mock.Anything).Return(policyFinding, nil).Once()
	s.env.OnActivity(a.Execute, mock.Anything, mock.Anything).Return(passing, nil).Once()
	s.at(time.Minute, func() {
		st := s.queryStatus()
		s.Require().NotNil(st.Pending)
		s.Equal(GatePolicy, st.Pending.Kind)
		s.Contains(st.Pending.Details, "subprocess.run")
		s.env.SignalWorkflow(SignalApprove, ApproveSignal{})
	})
	in := input
	in.Policy = PolicyAsk
	s.env.ExecuteWorkflow(CodingTask, in)
	s.NoError(s.env.GetWorkflowError())
}

// TestApprovedPolicyFindingTeachesNothing: code a person let run despite
// the safety policy passes first time, and the task's save of lessons says
// a check found something, so that its plan is not kept as a success.
func (s *codingTaskSuite) TestApprovedPolicyFindingTeachesNothing() {
	s.expectLessons(func(in activities.SaveLessonsInput) bool { return in.Succeeded && in.Findings })
	s.onPlan("step")
	s.onAttempt("s1")
	s.env.OnActivity(a.Check, mock.Anything, mock.Anything).Return(policyFinding, nil).Once()
	s.env.OnActivity(a.Execute, mock.Anything, mock.Anything).Return(passing, nil).Once()
	s.at(time.Minute, s.signal(SignalApprove, ApproveSignal{}))
	in := input
	in.Policy = PolicyAsk
	s.env.ExecuteWorkflow(CodingTask, in)
	s.NoError(s.env.GetWorkflowError())
}

func (s *codingTaskSuite) TestPolicyAskRejectedGoesToReflection() {
	s.onPlan("step")
	s.onAttempt("s1")
	s.env.OnActivity(a.Check, mock.Anything, mock.Anything).Return(policyFinding, nil).Once()
	s.onAttempt("s2")
	s.env.OnActivity(a.Check, mock.Anything, mock.Anything).Return(passing, nil).Once()
	// Guidance while the code waits is no approval: only approve runs it.
	s.at(time.Minute, s.signal(SignalFeedback, FeedbackSignal{Text: "looks fine to me"}))
	s.at(2*time.Minute, func() {
		st := s.queryStatus()
		s.Require().NotNil(st.Pending, "feedback answered the policy gate")
		s.Equal(GatePolicy, st.Pending.Kind)
		s.Equal(GateAnswers(GatePolicy), st.Pending.Answers)
		s.env.SignalWorkflow(SignalReject, RejectSignal{Reason: "no subprocesses"})
	})
	in := input
	in.Policy = PolicyAsk
	s.env.ExecuteWorkflow(CodingTask, in)
	s.NoError(s.env.GetWorkflowError())
	s.Contains(s.retryHeard(), policyFinding.Output+"\nRejected by a person: no subprocesses")
}

func (s *codingTaskSuite) TestBudgetGate() {
	for _, approve := range []bool{true, false} {
		s.Run(map[bool]string{true: "approved", false: "rejected"}[approve], func() {
			s.SetupTest()
			s.onPlan("step") // 15 tokens
			if approve {
				s.passEverything("s1") // 150 more
			}
			s.at(time.Minute, func() {
				st := s.queryStatus()
				s.Require().NotNil(st.Pending)
				s.Equal(GateBudget, st.Pending.Kind)
				if approve {
					s.env.SignalWorkflow(SignalApprove, ApproveSignal{})
				} else {
					s.env.SignalWorkflow(SignalReject, RejectSignal{Reason: "too dear"})
				}
			})
			in := input
			in.BudgetTokens = 10
			s.env.ExecuteWorkflow(CodingTask, in)
			if approve {
				// 165 tokens > 20: the second model call asks again; no answer in time fails it.
				app := s.requireAppError(ErrTypeBudgetExceeded)
				s.Contains(app.Message(), "no answer within")
			} else {
				app := s.requireAppError(ErrTypeBudgetExceeded)
				s.Contains(app.Message(), "too dear")
			}
		})
	}
}

func (s *codingTaskSuite) TestStuckGateFeedbackGrantsMoreIterations() {
	s.onPlan("step")
	s.onAttempt("s1")
	s.onCheck("s1", failing)
	s.onAttempt("s2")
	s.onCheck("s2", passing)
	s.at(time.Minute, func() {
		st := s.queryStatus()
		s.Require().NotNil(st.Pending)
		s.Equal(GateStuck, st.Pending.Kind)
		s.Contains(st.Pending.Details, "assert 3 == 4")
		s.env.SignalWorkflow(SignalFeedback, FeedbackSignal{Text: "add, don't subtract"})
	})
	in := input
	in.MaxIterations = 1
	in.AskWhenStuck = true
	s.env.ExecuteWorkflow(CodingTask, in)
	s.NoError(s.env.GetWorkflowError())
	s.Equal(3, s.queryStatus().MaxIterations) // 1 + max(2, 1/2)
	// The granted attempt hears of the failure that made the task stuck,
	// and of the guidance.
	heard := s.retryHeard()
	s.Contains(heard, "assert 3 == 4")
	s.Contains(heard, "add, don't subtract")
}

func (s *codingTaskSuite) TestFeedbackReachesTheNextPrompt() {
	s.onPlan("step")
	s.onAttempt("s1")
	s.onCheck("s1", failing).After(time.Minute)
	s.onAttempt("s2")
	s.onCheck("s2", passing)
	s.at(30*time.Second, s.signal(SignalFeedback, FeedbackSignal{Text: "use integers"}))
	s.env.ExecuteWorkflow(CodingTask, input)
	s.NoError(s.env.GetWorkflowError())
	s.Contains(s.retryHeard(), "use integers")
}

func (s *codingTaskSuite) TestCancelSignalFinishesTheActivityAndCheckpoints() {
	s.onPlan("step")
	s.onAttempt("s1")
	s.env.OnActivity(a.Check, mock.Anything, mock.Anything).After(time.Minute).Return(failing, nil).Once()
	s.at(30*time.Second, s.signal(SignalCancel, CancelSignal{Reason: "changed my mind"}))
	s.env.ExecuteWorkflow(CodingTask, input)

	app := s.requireAppError(ErrTypeCancelled)
	s.Contains(app.Message(), "changed my mind")
	s.Contains(app.Message(), "last checkpoint #1")
	st := s.queryStatus()
	s.Equal(PhaseCancelled, st.Phase)
	s.Len(st.Checkpoints, 1) // the running test finished and was checkpointed
}

func (s *codingTaskSuite) TestRollbackContinuesFromACheckpoint() {
	s.onPlan("step")
	s.onAttempt("s1")
	s.onCheck("s1", failing)
	// The retry's model is at work when the rollback comes: the attempt is
	// abandoned, its calls never run and nothing is checked.
	s.onTurn(activities.ModelTurnOutput{Calls: []activities.CallSummary{writeCall, finishCall}}).After(time.Minute)
	// After the rollback, the step opens again in a new conversation, from
	// checkpoint 1's files, with the person's feedback and no failure.
	s.onAttempt("s3")
	s.onCheck("s3", passing)

	s.at(30*time.Second, func() { // while the second attempt's model works
		s.env.UpdateWorkflow(UpdateRollback, "bad", &testsuite.TestUpdateCallback{
			OnReject:   func(err error) { s.Contains(err.Error(), "unknown checkpoint 9") },
			OnAccept:   func() { s.Fail("rollback to checkpoint 9 accepted") },
			OnComplete: func(any, error) {},
		}, RollbackRequest{Checkpoint: 9})
		s.env.UpdateWorkflow(UpdateRollback, "good", &testsuite.TestUpdateCallback{
			OnReject: func(err error) { s.Fail("rollback rejected", err.Error()) },
			OnAccept: func() {},
			OnComplete: func(v any, err error) {
				s.NoError(err)
				st, ok := v.(Status)
				s.Require().True(ok)
				s.Equal(1, len(st.Checkpoints))
			},
		}, RollbackRequest{Checkpoint: 1, Feedback: "start over from here"})
	})

	in := input
	in.MaxIterations = 5
	s.env.ExecuteWorkflow(CodingTask, in)
	s.NoError(s.env.GetWorkflowError())
	var res TaskResult
	s.NoError(s.env.GetWorkflowResult(&res))
	s.Equal("s3", res.SnapshotID)
	s.Equal(2, res.Iterations)
	s.Require().Len(res.Status.Checkpoints, 2)
	s.Equal(2, res.Status.Checkpoints[1].Iteration)
	s.Equal([]TranscriptRef{{ID: "default-test-workflow-id/1", Step: 1}, {ID: "default-test-workflow-id/2", Step: 1}}, res.Status.Transcripts)
	s.Require().Len(s.opened, 2)
	reopened := s.opened[1]
	s.Equal("s1", reopened.Snapshot)
	s.Equal([]string{"start over from here"}, reopened.Guidance)
	s.Empty(reopened.Failure)
	s.Require().Len(s.tools, 2)
	s.Equal("s1", s.tools[1].Snapshot)
}

// TestPolicyWarnChecksWithWarningsAndRecordsThem: in warn mode the check
// is asked to warn, and its warnings are in the checkpoint for a person to
// review; a task input without a mode (one recorded before warn) denies.
func (s *codingTaskSuite) TestPolicyWarnChecksWithWarningsAndRecordsThem() {
	warned := passing
	warned.Warnings = []policy.Finding{{File: "api.go", Line: 3, Rule: policy.Network, Message: `import "net/http" opens network connections`}}
	s.onPlan("step")
	s.onAttempt("s1")
	s.env.OnActivity(a.Check, mock.Anything, mock.MatchedBy(func(in activities.CheckInput) bool {
		return in.Warn && !in.IgnorePolicy
	})).Return(warned, nil).Once()
	in := input
	in.Policy = PolicyWarn
	s.env.ExecuteWorkflow(CodingTask, in)
	s.NoError(s.env.GetWorkflowError())
	st := s.queryStatus()
	s.Require().Len(st.Checkpoints, 1)
	s.Equal(warned.Warnings, st.Checkpoints[0].Warnings)
	s.Contains(st.Checkpoints[0].Summary, "1 safety warning(s) to review")
}

func TestPolicyDefaults(t *testing.T) {
	for mode, want := range map[string]string{"": PolicyDeny, PolicyWarn: PolicyWarn} {
		tk, err := newTask(TaskInput{Task: "x", Language: "go", Policy: mode})
		if err != nil || tk.in.Policy != want {
			t.Errorf("policy %q: %q, %v; want %q", mode, tk.in.Policy, err, want)
		}
	}
	if DefaultPolicy != PolicyWarn {
		t.Errorf("DefaultPolicy = %q, want warn", DefaultPolicy)
	}
}
