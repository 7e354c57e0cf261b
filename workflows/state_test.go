package workflows

import (
	"context"
	"errors"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"

	"github.com/autocoder/autocoder/activities"
)

// continuedWith returns the input the task continued as new with.
func (s *codingTaskSuite) continuedWith() TaskInput {
	var can *workflow.ContinueAsNewError
	s.Require().True(errors.As(s.env.GetWorkflowError(), &can), "want a continue-as-new, got %v", s.env.GetWorkflowError())
	var next TaskInput
	s.Require().NoError(converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	s.Require().NotNil(next.Carried)
	return next
}

// TestSignalsInTheContinueAsNewTaskAreCarried: feedback and cancel that
// arrive in the very workflow task that decides to continue as new (with
// the plan's result) are not yet read by the signal loop; they still reach
// the next run.
func (s *codingTaskSuite) TestSignalsInTheContinueAsNewTaskAreCarried() {
	s.env.OnActivity(a.Plan, mock.Anything, mock.Anything).Return(func(context.Context, activities.PlanInput) (activities.PlanOutput, error) {
		s.env.SignalWorkflowSkippingWorkflowTask(SignalFeedback, FeedbackSignal{Text: "keep it small"})
		s.env.SignalWorkflowSkippingWorkflowTask(SignalCancel, CancelSignal{Reason: "enough"})
		return activities.PlanOutput{Steps: []string{"step"}}, nil
	}).Once()
	s.env.SetContinueAsNewSuggested(true)

	s.env.ExecuteWorkflow(CodingTask, input)

	next := s.continuedWith()
	s.Equal([]string{"keep it small"}, next.Carried.Status.Feedback)
	s.Require().NotNil(next.Carried.Cancel)
	s.Equal("enough", next.Carried.Cancel.Reason)
	s.Equal([]string{"step"}, next.Carried.Status.Plan)
}
