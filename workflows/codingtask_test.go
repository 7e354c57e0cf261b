package workflows

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/suite"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	"github.com/autocoder/autocoder/activities"
	"github.com/autocoder/autocoder/internal/llm"
)

type codingTaskSuite struct {
	suite.Suite
	testsuite.WorkflowTestSuite
	env *testsuite.TestWorkflowEnvironment

	// What the workflow wrote to conversations, in order.
	opened   []activities.OpenStepInput
	appended []activities.AppendMessagesInput
	tools    []activities.RunToolsInput
}

func TestCodingTask(t *testing.T) { suite.Run(t, new(codingTaskSuite)) }

func (s *codingTaskSuite) SetupTest() {
	s.newEnv()
	// Memory is exercised by its own test; elsewhere it saves nothing.
	s.env.OnActivity(a.SaveLessons, mock.Anything, mock.Anything).Return(nil, nil).Maybe()
}

// newEnv starts a test environment whose conversations open with two
// messages and take every message the workflow appends.
func (s *codingTaskSuite) newEnv() {
	s.env = s.NewTestWorkflowEnvironment()
	// The SDK's 1 s limit on a workflow task, meant for code that blocks,
	// was passed once by the first task of a race-built test binary
	// beside others on two busy cores: a workflow that truly blocks still
	// fails, after 10 s.
	s.env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: 10 * time.Second})
	s.env.RegisterWorkflowWithOptions(CodingTask, RegisterOptions())
	s.env.RegisterActivity(&activities.Activities{})
	s.opened, s.appended, s.tools = nil, nil, nil
	s.env.OnActivity(a.OpenStep, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.OpenStepInput) (activities.OpenStepOutput, error) {
		s.opened = append(s.opened, in)
		return activities.OpenStepOutput{Length: 2}, nil
	}).Maybe()
	s.env.OnActivity(a.AppendMessages, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.AppendMessagesInput) (int, error) {
		s.appended = append(s.appended, in)
		return in.Position + len(in.Messages), nil
	}).Maybe()
}

func (s *codingTaskSuite) AfterTest(_, _ string) { s.env.AssertExpectations(s.T()) }

var (
	passing   = activities.TestSummary{Stage: "test", Passed: true}
	failing   = activities.TestSummary{Stage: "test", ExitCode: 1, FailingTests: []string{"test_add"}, Output: "assert 3 == 4"}
	input     = TaskInput{Task: "add two numbers", Language: "python", MaxIterations: 3}
	turnUsage = activities.Usage{PromptTokens: 100, CompletionTokens: 50, Calls: 1}
)

func (s *codingTaskSuite) onPlan(steps ...string) {
	s.env.OnActivity(a.Plan, mock.Anything, mock.Anything).Return(activities.PlanOutput{Steps: steps, Usage: activities.Usage{PromptTokens: 10, CompletionTokens: 5, Calls: 1}}, nil).Once()
}

// onTurn expects one model turn answering with out, appended where the
// workflow asks.
func (s *codingTaskSuite) onTurn(out activities.ModelTurnOutput) *testsuite.MockCallWrapper {
	if out.Usage.Calls == 0 && !out.NeedsSummary {
		out.Usage = turnUsage
	}
	return s.env.OnActivity(a.ModelTurn, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.ModelTurnInput) (activities.ModelTurnOutput, error) {
		o := out
		if !o.NeedsSummary {
			o.Length = in.Position + 1
		}
		return o, nil
	}).Once()
}

// onTools expects one RunTools that leaves the workspace as snapshot.
func (s *codingTaskSuite) onTools(snapshot string) *testsuite.MockCallWrapper {
	return s.env.OnActivity(a.RunTools, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.RunToolsInput) (activities.RunToolsOutput, error) {
		s.tools = append(s.tools, in)
		return activities.RunToolsOutput{Snapshot: snapshot, Length: in.Position + len(in.CallIDs)}, nil
	}).Once()
}

var (
	writeCall  = activities.CallSummary{ID: "w", Name: "write", Args: `{"path":"calc.py","content":"def add(a, b):`}
	finishCall = activities.CallSummary{ID: "f", Name: activities.ToolFinish}
)

// onAttempt expects an attempt whose model writes a file and finishes in
// one turn, leaving the workspace as snapshot.
func (s *codingTaskSuite) onAttempt(snapshot string) {
	s.onTurn(activities.ModelTurnOutput{Calls: []activities.CallSummary{writeCall, finishCall},
		Finish: &activities.FinishArgs{Summary: "wrote " + snapshot, Tests: []string{"test_calc.py"}}})
	s.onTools(snapshot)
}

func (s *codingTaskSuite) onCheck(snapshot string, result activities.TestSummary) *testsuite.MockCallWrapper {
	return s.env.OnActivity(a.Check, mock.Anything, mock.MatchedBy(func(in activities.CheckInput) bool { return in.SnapshotID == snapshot })).Return(result, nil).Once()
}

func (s *codingTaskSuite) TestHappyPath() {
	s.onPlan("implement add with tests")
	s.onAttempt("snap1")
	s.env.OnActivity(a.Check, mock.Anything, activities.CheckInput{SnapshotID: "snap1", Language: "python", RecallLessons: true}).Return(passing, nil).Once()

	s.env.ExecuteWorkflow(CodingTask, input)

	s.True(s.env.IsWorkflowCompleted())
	s.NoError(s.env.GetWorkflowError())
	var res TaskResult
	s.NoError(s.env.GetWorkflowResult(&res))
	s.Equal("snap1", res.SnapshotID)
	s.Equal(1, res.Iterations)
	s.True(res.TestsByModel)
	s.Equal(PhaseSucceeded, res.Status.Phase)
	s.Len(res.Status.Checkpoints, 1)
	s.Equal(110, res.Status.Usage.PromptTokens)
	s.Equal(2, res.Status.Usage.Calls)
	s.Equal([]TranscriptRef{{ID: "default-test-workflow-id/1", Step: 1}}, res.Status.Transcripts)
	s.Require().Len(s.opened, 1)
	s.Equal(activities.OpenStepInput{Transcript: "default-test-workflow-id/1", Task: input.Task, Language: "python",
		Plan: []string{"implement add with tests"}, Step: 1}, s.opened[0])
	// The finish call got its result, after the write's, and nothing else
	// was written to the conversation.
	s.Require().Len(s.appended, 1)
	s.Equal(4, s.appended[0].Position)
	s.Equal([]llm.Message{{Role: llm.RoleTool, Result: &llm.ToolResult{CallID: "f", Name: "finish", Content: "finished"}}}, s.appended[0].Messages)
}

// TestRetryContinuesTheConversation: a failed check is reported to the
// same conversation, after the model's last turn, and the retry starts
// from the failed attempt's files.
func (s *codingTaskSuite) TestRetryContinuesTheConversation() {
	s.onPlan("implement add with tests")
	s.onAttempt("snap1")
	s.onCheck("snap1", failing)
	s.onAttempt("snap2")
	s.onCheck("snap2", passing)

	s.env.ExecuteWorkflow(CodingTask, input)

	s.NoError(s.env.GetWorkflowError())
	var res TaskResult
	s.NoError(s.env.GetWorkflowResult(&res))
	s.Equal("snap2", res.SnapshotID)
	s.Equal(2, res.Iterations)
	s.Len(s.opened, 1, "the retry opened a new conversation")
	s.Len(res.Status.Transcripts, 1)
	// Opening (0, 1), turn (2), write (3), finish (4), the failure (5),
	// turn (6), write (7), finish (8).
	s.Require().Len(s.appended, 3)
	failure := s.appended[1]
	s.Equal("default-test-workflow-id/1", failure.Transcript)
	s.Equal(5, failure.Position)
	s.Require().Len(failure.Messages, 1)
	s.Equal(llm.RoleUser, failure.Messages[0].Role)
	s.True(strings.HasPrefix(failure.Messages[0].Text, RetryMarker), "the failure report starts with RetryMarker: %q", failure.Messages[0].Text)
	for _, want := range []string{"tests failed: test_add", "assert 3 == 4", "call finish"} {
		s.Contains(failure.Messages[0].Text, want)
	}
	s.Equal(8, s.appended[2].Position)
	s.Require().Len(s.tools, 2)
	s.Equal("snap1", s.tools[1].Snapshot)
	s.Equal(7, s.tools[1].Position)
}

// TestAnswerWithoutToolCalls: a turn without calls ends the attempt and
// its fenced blocks are applied; blocks that cannot be applied fail the
// attempt untested, and the retry hears why.
func (s *codingTaskSuite) TestAnswerWithoutToolCalls() {
	s.onPlan("step")
	s.onTurn(activities.ModelTurnOutput{Text: "Here is the code."})
	s.env.OnActivity(a.ApplyAnswer, mock.Anything, activities.ApplyAnswerInput{Transcript: "default-test-workflow-id/1", Position: 2}).
		Return(activities.ApplyAnswerOutput{Rejected: "no code blocks found"}, nil).Once()
	s.onTurn(activities.ModelTurnOutput{Text: "```path=calc.py ..."})
	s.env.OnActivity(a.ApplyAnswer, mock.Anything, activities.ApplyAnswerInput{Transcript: "default-test-workflow-id/1", Position: 4}).
		Return(activities.ApplyAnswerOutput{Snapshot: "snap2", Changed: []string{"calc.py"}}, nil).Once()
	s.onCheck("snap2", passing)

	s.env.ExecuteWorkflow(CodingTask, input)

	s.NoError(s.env.GetWorkflowError())
	st := s.queryStatus()
	s.Require().Len(st.Checkpoints, 2)
	s.Equal("model output rejected", st.Checkpoints[0].Summary)
	s.Require().Len(s.appended, 1)
	s.Equal(3, s.appended[0].Position)
	s.Contains(s.appended[0].Messages[0].Text, "no code blocks found")
}

func (s *codingTaskSuite) TestIterationsExhaustedFailsWithTheLastOutput() {
	s.onPlan("step")
	for range 3 {
		s.onAttempt("snapX")
	}
	s.env.OnActivity(a.Check, mock.Anything, mock.Anything).Return(failing, nil).Times(3)

	s.env.ExecuteWorkflow(CodingTask, input)

	err := s.env.GetWorkflowError()
	s.Require().Error(err)
	var app *temporal.ApplicationError
	s.Require().True(errors.As(err, &app))
	s.Equal(ErrTypeIterationsExhausted, app.Type())
	s.Contains(app.Message(), "after 3 iterations")
	s.Contains(app.Message(), "assert 3 == 4")
	s.Equal(PhaseFailed, s.queryStatus().Phase)
}

// A failure that carries a check's output (here 600 KB of it) reaches the
// status and the task's error as one screen: its head and its tail.
func (s *codingTaskSuite) TestFailureMessageIsBounded() {
	s.onPlan("step")
	s.onAttempt("snapX")
	huge := failing
	huge.Output = "first line of the output\n" + strings.Repeat("tar: File name too long\n", 25000) + "last line of the output"
	s.env.OnActivity(a.Check, mock.Anything, mock.Anything).Return(huge, nil).Once()

	one := input
	one.MaxIterations = 1
	s.env.ExecuteWorkflow(CodingTask, one)

	var app *temporal.ApplicationError
	s.Require().True(errors.As(s.env.GetWorkflowError(), &app))
	st := s.queryStatus()
	for _, msg := range []string{app.Message(), st.Error} {
		s.LessOrEqual(len(msg), MaxErrorBytes)
		s.Contains(msg, "first line of the output")
		s.Contains(msg, "last line of the output")
		s.Contains(msg, "bytes elided")
	}
}

func (s *codingTaskSuite) TestValidationFailureSkipsTests() {
	s.onPlan("step")
	s.onAttempt("snap1")
	bad := activities.TestSummary{Stage: "validate", ExitCode: 1, Output: "main.py:3: [process] subprocess is not allowed"}
	s.onCheck("snap1", bad)
	s.onAttempt("snap2")
	s.env.OnActivity(a.Check, mock.Anything, activities.CheckInput{SnapshotID: "snap2", Language: "python", RecallLessons: true}).Return(passing, nil).Once()

	s.env.ExecuteWorkflow(CodingTask, input)
	s.NoError(s.env.GetWorkflowError())
	s.Contains(s.appended[1].Messages[0].Text, "subprocess is not allowed")
}

func (s *codingTaskSuite) TestNonRetryableModelErrorFailsClearly() {
	authErr := temporal.NewNonRetryableApplicationError("model provider rejected the API key (HTTP 401): set OPENAI_API_KEY", activities.ErrTypeModelAuth, nil)
	s.env.OnActivity(a.Plan, mock.Anything, mock.Anything).Return(activities.PlanOutput{}, authErr).Once()

	s.env.ExecuteWorkflow(CodingTask, input)

	err := s.env.GetWorkflowError()
	s.Require().Error(err)
	s.Contains(err.Error(), "rejected the API key")
	st := s.queryStatus()
	s.Equal(PhaseFailed, st.Phase)
	s.Contains(st.Error, "OPENAI_API_KEY")
}

func (s *codingTaskSuite) TestCancellationStopsTheTask() {
	s.onPlan("step")
	s.onAttempt("snap1")
	s.env.OnActivity(a.Check, mock.Anything, mock.Anything).Return(func(ctx context.Context, _ activities.CheckInput) (activities.TestSummary, error) {
		<-ctx.Done()
		return activities.TestSummary{}, ctx.Err()
	}).Once()
	s.env.RegisterDelayedCallback(func() {
		st := s.queryStatus()
		s.Equal(PhaseChecking, st.Phase)
		s.Equal(DefaultMaxTurns, st.MaxTurns, "the status names the attempt's turn budget")
		s.env.CancelWorkflow()
	}, time.Second)

	s.env.ExecuteWorkflow(CodingTask, input)

	err := s.env.GetWorkflowError()
	s.Require().Error(err)
	var canceled *temporal.CanceledError
	s.True(errors.As(err, &canceled), "want a cancellation, got %v", err)
	s.Equal(PhaseCancelled, s.queryStatus().Phase)
}

func (s *codingTaskSuite) TestBadInputIsRejected() {
	s.env.ExecuteWorkflow(CodingTask, TaskInput{Task: "x", Language: "cobol"})
	err := s.env.GetWorkflowError()
	s.Require().Error(err)
	s.True(strings.Contains(err.Error(), "unsupported language"))
}

func (s *codingTaskSuite) queryStatus() Status {
	v, err := s.env.QueryWorkflow(QueryStatus)
	s.Require().NoError(err)
	var st Status
	s.Require().NoError(v.Get(&st))
	return st
}
