package workflows

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/suite"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/autocoder/autocoder/activities"
)

type codingTaskSuite struct {
	suite.Suite
	testsuite.WorkflowTestSuite
	env *testsuite.TestWorkflowEnvironment
}

func TestCodingTask(t *testing.T) { suite.Run(t, new(codingTaskSuite)) }

func (s *codingTaskSuite) SetupTest() {
	s.newEnv()
	// Memory is exercised by its own test; elsewhere it saves nothing.
	s.env.OnActivity(a.SaveLessons, mock.Anything, mock.Anything).Return(nil, nil).Maybe()
}

func (s *codingTaskSuite) newEnv() {
	s.env = s.NewTestWorkflowEnvironment()
	s.env.RegisterWorkflowWithOptions(CodingTask, RegisterOptions())
	s.env.RegisterActivity(&activities.Activities{})
}

func (s *codingTaskSuite) AfterTest(_, _ string) { s.env.AssertExpectations(s.T()) }

var (
	passing = activities.TestSummary{Stage: "test", Passed: true}
	failing = activities.TestSummary{Stage: "test", ExitCode: 1, FailingTests: []string{"test_add"}, Output: "assert 3 == 4"}
	input   = TaskInput{Task: "add two numbers", Language: "python", MaxIterations: 3}
)

func (s *codingTaskSuite) onPlan(steps ...string) {
	s.env.OnActivity(a.Plan, mock.Anything, mock.Anything).Return(activities.PlanOutput{Steps: steps, Usage: activities.Usage{PromptTokens: 10, CompletionTokens: 5, Calls: 1}}, nil).Once()
}

func (s *codingTaskSuite) onGenerate(snapshot string) *testsuite.MockCallWrapper {
	return s.env.OnActivity(a.Generate, mock.Anything, mock.Anything).Return(activities.GenerateOutput{SnapshotID: snapshot, Usage: activities.Usage{PromptTokens: 100, CompletionTokens: 50, Calls: 1}}, nil).Once()
}

func (s *codingTaskSuite) TestHappyPath() {
	s.onPlan("implement add with tests")
	s.onGenerate("snap1")
	s.env.OnActivity(a.Check, mock.Anything, activities.CheckInput{SnapshotID: "snap1", Language: "python"}).Return(passing, nil).Once()

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
}

// onRetry expects the Generate of a retry: it reflects on the given
// failure first and answers with the reflection.
func (s *codingTaskSuite) onRetry(failure activities.TestSummary, reflection, snapshot string) *testsuite.MockCallWrapper {
	return s.env.OnActivity(a.Generate, mock.Anything, mock.MatchedBy(func(in activities.GenerateInput) bool {
		return in.Failure != nil && in.Failure.Stage == failure.Stage && in.Failure.Output == failure.Output
	})).Return(activities.GenerateOutput{SnapshotID: snapshot, Reflection: reflection}, nil).Once()
}

func (s *codingTaskSuite) TestReflectLoopFeedsTheNextAttempt() {
	s.onPlan("implement add with tests")
	s.onGenerate("snap1")
	s.env.OnActivity(a.Check, mock.Anything, mock.MatchedBy(func(in activities.CheckInput) bool { return in.SnapshotID == "snap1" })).Return(failing, nil).Once()
	s.env.OnActivity(a.Generate, mock.Anything, mock.MatchedBy(func(in activities.GenerateInput) bool {
		return in.Iteration == 2 && in.BaseSnapshot == "snap1" && in.Failure != nil && in.Failure.Output == "assert 3 == 4" && in.Feedback == ""
	})).Return(activities.GenerateOutput{SnapshotID: "snap2", Reflection: "Root cause: off by one"}, nil).Once()
	s.env.OnActivity(a.Check, mock.Anything, mock.MatchedBy(func(in activities.CheckInput) bool { return in.SnapshotID == "snap2" })).Return(failing, nil).Once()
	// The retry after that reflects on its own failure, not the first one's.
	s.env.OnActivity(a.Generate, mock.Anything, mock.MatchedBy(func(in activities.GenerateInput) bool {
		return in.Iteration == 3 && in.BaseSnapshot == "snap2" && in.Failure != nil
	})).Return(activities.GenerateOutput{SnapshotID: "snap3", Reflection: "Root cause: sign"}, nil).Once()
	s.env.OnActivity(a.Check, mock.Anything, mock.MatchedBy(func(in activities.CheckInput) bool { return in.SnapshotID == "snap3" })).Return(passing, nil).Once()
	var phases []Phase
	s.env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		if info.ActivityType.Name == "Generate" {
			phases = append(phases, s.queryStatus().Phase)
		}
	})

	s.env.ExecuteWorkflow(CodingTask, input)
	s.Equal([]Phase{PhaseGenerating, PhaseReflecting, PhaseReflecting}, phases)

	s.NoError(s.env.GetWorkflowError())
	var res TaskResult
	s.NoError(s.env.GetWorkflowResult(&res))
	s.Equal("snap3", res.SnapshotID)
	s.Equal(3, res.Iterations)
	s.Require().Len(res.Status.Checkpoints, 3)
	s.False(res.Status.Checkpoints[0].Passed)
	s.Equal("tests failed: test_add", res.Status.Checkpoints[0].Summary)
	s.True(res.Status.Checkpoints[2].Passed)
}

func (s *codingTaskSuite) TestRejectedModelOutputIsReflectedOn() {
	s.onPlan("step")
	s.env.OnActivity(a.Generate, mock.Anything, mock.MatchedBy(func(in activities.GenerateInput) bool { return in.Failure == nil })).
		Return(activities.GenerateOutput{Rejected: "no code blocks found"}, nil).Once()
	s.onRetry(activities.TestSummary{Stage: "generate", Output: "no code blocks found"}, "use fenced blocks", "snap2")
	s.env.OnActivity(a.Check, mock.Anything, mock.Anything).Return(passing, nil).Once()

	s.env.ExecuteWorkflow(CodingTask, input)
	s.NoError(s.env.GetWorkflowError())
}

func (s *codingTaskSuite) TestIterationsExhaustedFailsWithTheLastOutput() {
	s.onPlan("step")
	s.env.OnActivity(a.Generate, mock.Anything, mock.Anything).Return(activities.GenerateOutput{SnapshotID: "snapX"}, nil).Times(3)
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

func (s *codingTaskSuite) TestValidationFailureSkipsTests() {
	s.onPlan("step")
	s.onGenerate("snap1")
	bad := activities.TestSummary{Stage: "validate", ExitCode: 1, Output: "main.py:3: [process] subprocess is not allowed"}
	s.env.OnActivity(a.Check, mock.Anything, mock.Anything).Return(bad, nil).Once()
	s.onRetry(bad, "drop subprocess", "snap2")
	s.env.OnActivity(a.Check, mock.Anything, activities.CheckInput{SnapshotID: "snap2", Language: "python"}).Return(passing, nil).Once()

	s.env.ExecuteWorkflow(CodingTask, input)
	s.NoError(s.env.GetWorkflowError())
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
	s.onGenerate("snap1")
	s.env.OnActivity(a.Check, mock.Anything, mock.Anything).Return(func(ctx context.Context, _ activities.CheckInput) (activities.TestSummary, error) {
		<-ctx.Done()
		return activities.TestSummary{}, ctx.Err()
	}).Once()
	s.env.RegisterDelayedCallback(func() {
		s.Equal(PhaseChecking, s.queryStatus().Phase)
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
