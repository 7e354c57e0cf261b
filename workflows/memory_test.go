package workflows

import (
	"github.com/stretchr/testify/mock"

	"github.com/autocoder/autocoder/activities"
)

// TestLessonsRecalledAndSaved: task lessons reach the plan and every
// generate; failure lessons reach the retry; the verified fix (failed
// snapshot → passing snapshot) is saved with the recalled lessons' outcome.
func (s *codingTaskSuite) TestLessonsRecalledAndSaved() {
	s.newEnv()
	// Plan and the retry's Generate bring the lessons along: no Recall of
	// their own.
	s.env.OnActivity(a.Plan, mock.Anything, mock.MatchedBy(func(in activities.PlanInput) bool { return in.RecallLessons })).
		Return(activities.PlanOutput{Steps: []string{"step"}, Lessons: &activities.RecallOutput{IDs: []string{"L1"}, Text: "task lesson\n"}}, nil).Once()
	s.env.OnActivity(a.Generate, mock.Anything, mock.MatchedBy(func(in activities.GenerateInput) bool {
		return in.Iteration == 1 && in.Lessons == "task lesson\n"
	})).Return(activities.GenerateOutput{SnapshotID: "s1"}, nil).Once()
	s.env.OnActivity(a.Check, mock.Anything, mock.MatchedBy(func(in activities.CheckInput) bool { return in.SnapshotID == "s1" })).Return(failing, nil).Once()
	s.env.OnActivity(a.Generate, mock.Anything, mock.MatchedBy(func(in activities.GenerateInput) bool {
		return in.Iteration == 2 && in.Lessons == "task lesson\n" && in.Failure != nil && in.RecallLessons
	})).Return(activities.GenerateOutput{SnapshotID: "s2", Reflection: "off by one",
		Lessons: &activities.RecallOutput{IDs: []string{"L2", "L1"}, Text: "fix lesson\n"}}, nil).Once()
	s.env.OnActivity(a.Check, mock.Anything, mock.MatchedBy(func(in activities.CheckInput) bool { return in.SnapshotID == "s2" })).Return(passing, nil).Once()
	s.env.OnActivity(a.SaveLessons, mock.Anything, activities.SaveLessonsInput{
		Task: input.Task, Language: "python", Plan: []string{"step"},
		Fixes:    []activities.Fix{{FailedSnapshot: "s1", PassedSnapshot: "s2", FailureOutput: failing.Output, Reflection: "off by one"}},
		Recalled: []string{"L1", "L2"}, Succeeded: true,
	}).Return([]string{"L3"}, nil).Once()

	s.env.ExecuteWorkflow(CodingTask, input)
	s.NoError(s.env.GetWorkflowError())
	s.Equal([]string{"L1", "L2"}, s.queryStatus().Lessons)
}
