package workflows

import (
	"slices"
	"strings"

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
		Recalled: []string{"L1"}, FailedAfter: []int{1}, Succeeded: true,
	}).Return([]string{"L3"}, nil).Once()

	s.env.ExecuteWorkflow(CodingTask, input)
	s.NoError(s.env.GetWorkflowError())
	s.Equal([]string{"L1"}, s.queryStatus().Lessons)
	s.Require().Len(s.opened, 1)
	s.Equal("task lesson\n", s.opened[0].Lessons)
}

// TestFailureLessonsReachTheRetry: a failed check brings the lessons of
// failures like it; the retry that reports the failure carries them, once,
// and their ids are the task's, but their text stays out of its record.
func (s *codingTaskSuite) TestFailureLessonsReachTheRetry() {
	// L2 came with the first of three failed checks, L3 with the last: L2
	// is charged with the two after it, L3 with none.
	s.expectLessons(func(in activities.SaveLessonsInput) bool {
		return !in.Succeeded && slices.Equal(in.Recalled, []string{"L2", "L3"}) && slices.Equal(in.FailedAfter, []int{2, 0})
	})
	s.onPlan("step")
	withLessons := func(id, text string) activities.TestSummary {
		f := failing
		f.Lessons = &activities.RecallOutput{IDs: []string{id}, Text: text}
		return f
	}
	for i, result := range []activities.TestSummary{withLessons("L2", "- lesson two\n"), failing, withLessons("L3", "- lesson three\n")} {
		snapshot := []string{"s1", "s2", "s3"}[i]
		s.onAttempt(snapshot)
		s.env.OnActivity(a.Check, mock.Anything, mock.MatchedBy(func(in activities.CheckInput) bool {
			return in.SnapshotID == snapshot && in.RecallLessons
		})).Return(result, nil).Once()
	}

	s.env.ExecuteWorkflow(CodingTask, input)

	s.Error(s.env.GetWorkflowError())
	// Opening, then per attempt its finish result and (but the last) the
	// failure report.
	s.Require().Len(s.appended, 5)
	first, second := s.appended[1].Messages[0].Text, s.appended[3].Messages[0].Text
	s.True(strings.HasPrefix(first, RetryMarker), first)
	s.Contains(first, "Lessons from similar failures:\n- lesson two\n")
	s.True(strings.HasPrefix(second, RetryMarker), second)
	s.NotContains(second, "lesson", "a failure without lessons of its own repeats none")
	st := s.queryStatus()
	s.Equal([]string{"L2", "L3"}, st.Lessons)
	s.Require().NotNil(st.LastTest)
	s.Nil(st.LastTest.Lessons, "the lessons' text stays out of the task's record")
}
