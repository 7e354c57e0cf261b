package workflows

import (
	"github.com/stretchr/testify/mock"

	"github.com/autocoder/autocoder/activities"
)

// TestLessonsRecalledAndSaved: the task's lessons, recalled by Plan, reach
// the step's conversation; the verified fix (failed snapshot → passing
// snapshot, with the model's own account of it) is saved with the recalled
// lessons' outcome.
func (s *codingTaskSuite) TestLessonsRecalledAndSaved() {
	s.newEnv()
	s.env.OnActivity(a.Plan, mock.Anything, mock.MatchedBy(func(in activities.PlanInput) bool { return in.RecallLessons })).
		Return(activities.PlanOutput{Steps: []string{"step"}, Lessons: &activities.RecallOutput{IDs: []string{"L1"}, Text: "task lesson\n"}}, nil).Once()
	s.onAttempt("s1")
	s.onCheck("s1", failing)
	s.onAttempt("s2")
	s.onCheck("s2", passing)
	s.env.OnActivity(a.SaveLessons, mock.Anything, activities.SaveLessonsInput{
		Task: input.Task, Language: "python", Plan: []string{"step"},
		Fixes:    []activities.Fix{{FailedSnapshot: "s1", PassedSnapshot: "s2", FailureOutput: failing.Output, Reflection: "wrote s2"}},
		Recalled: []string{"L1"}, Succeeded: true,
	}).Return([]string{"L3"}, nil).Once()

	s.env.ExecuteWorkflow(CodingTask, input)
	s.NoError(s.env.GetWorkflowError())
	s.Equal([]string{"L1"}, s.queryStatus().Lessons)
	s.Require().Len(s.opened, 1)
	s.Equal("task lesson\n", s.opened[0].Lessons)
}
