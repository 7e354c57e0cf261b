package workflows

import (
	"time"

	"github.com/stretchr/testify/mock"

	"github.com/autocoder/autocoder/activities"
	"github.com/autocoder/autocoder/internal/integrity"
)

var (
	tampered = activities.TestSummary{Stage: "test", ExitCode: 1, Output: "Test integrity: ...\n1 failed",
		Findings: []integrity.Finding{{Kind: integrity.KindChanged, Path: "test_calc.py"}}, Restored: "s1-restored"}
	tamperedButRight = activities.TestSummary{Stage: "test", ExitCode: 1, TestsPassed: true, Output: "Test integrity: ...\n1 passed",
		Findings: []integrity.Finding{{Kind: integrity.KindSkipped, Path: "calc_test.go"}}, Restored: "s1-restored"}
	userTests = TaskInput{Task: "fix add", Language: "python", MaxIterations: 1, InputSnapshot: "in",
		TestCmd: "pytest", Protect: []string{"checks/**"}}
)

// checksJudgeByTheUsersTests expects a check of the snapshot that names the
// task's input and protect globs, and answers with result.
func (s *codingTaskSuite) checksJudgeByTheUsersTests(snapshot string, result activities.TestSummary) {
	s.env.OnActivity(a.Check, mock.Anything, mock.MatchedBy(func(in activities.CheckInput) bool {
		return in.SnapshotID == snapshot && in.InputSnapshot == "in" && len(in.Protect) == 1 && !in.AllowTestEdits
	})).Return(result, nil).Once()
}

// expectLessons expects the one SaveLessons of a task, matching want.
func (s *codingTaskSuite) expectLessons(want func(activities.SaveLessonsInput) bool) {
	s.newEnv()
	s.env.OnActivity(a.SaveLessons, mock.Anything, mock.MatchedBy(want)).Return(nil, nil).Once()
}

func (s *codingTaskSuite) TestTamperedAttemptFailsAndTeachesNothing() {
	s.expectLessons(func(in activities.SaveLessonsInput) bool {
		return !in.Succeeded && len(in.Unfixed) == 0 && len(in.Fixes) == 0
	})
	s.onPlan("fix add")
	s.onAttempt("s1")
	s.checksJudgeByTheUsersTests("s1", tampered)

	s.env.ExecuteWorkflow(CodingTask, userTests)
	app := s.requireAppError(ErrTypeIterationsExhausted)
	s.Contains(app.Message(), "integrity: changed the user's test file test_calc.py")
	st := s.queryStatus()
	s.Require().Len(st.Checkpoints, 1)
	s.Equal(tampered.Findings, st.Checkpoints[0].Findings)
	s.Nil(st.Pending, "a failing attempt needs no person")
}

func (s *codingTaskSuite) TestTamperingThatStillFailsIsNoFixToLearn() {
	s.expectLessons(func(in activities.SaveLessonsInput) bool {
		return in.Succeeded && len(in.Fixes) == 0 && !in.FirstTry && in.Findings
	})
	s.onPlan("fix add")
	s.onAttempt("s1")
	s.checksJudgeByTheUsersTests("s1", tampered)
	s.onAttempt("s2")
	s.checksJudgeByTheUsersTests("s2", passing)

	in := userTests
	in.MaxIterations = 2
	s.env.ExecuteWorkflow(CodingTask, in)
	s.NoError(s.env.GetWorkflowError())
	// The retry starts from the attempt with the user's tests put back,
	// and the model hears what its change did to them.
	s.Equal("s1-restored", s.tools[1].Snapshot)
	s.Contains(s.retryHeard(), "changed the user's test file test_calc.py")
}

func (s *codingTaskSuite) TestIntegrityGate() {
	for _, approve := range []bool{true, false} {
		s.Run(map[bool]string{true: "approved", false: "rejected"}[approve], func() {
			s.SetupTest()
			s.onPlan("fix add")
			s.onAttempt("s1")
			s.checksJudgeByTheUsersTests("s1", tamperedButRight)
			s.at(time.Minute, func() {
				st := s.queryStatus()
				s.Require().NotNil(st.Pending)
				s.Equal(GateIntegrity, st.Pending.Kind)
				s.Contains(st.Pending.Details, "made the user's tests skip in calc_test.go")
				if approve {
					s.env.SignalWorkflow(SignalApprove, ApproveSignal{Comment: "the skip is right"})
				} else {
					s.env.SignalWorkflow(SignalReject, RejectSignal{})
				}
			})
			s.env.ExecuteWorkflow(CodingTask, userTests)
			if !approve {
				s.requireAppError(ErrTypeIterationsExhausted)
				return
			}
			s.NoError(s.env.GetWorkflowError())
			var res TaskResult
			s.NoError(s.env.GetWorkflowResult(&res))
			s.Equal("s1", res.SnapshotID)
			s.Equal("the skip is right", res.Status.TestEditsApproved)
			s.env.AssertExpectations(s.T())
		})
	}
}

func (s *codingTaskSuite) TestAllowTestEditsReachesTheCheck() {
	s.onPlan("fix the flaky test")
	s.onAttempt("s1")
	s.env.OnActivity(a.Check, mock.Anything, mock.MatchedBy(func(in activities.CheckInput) bool {
		return in.AllowTestEdits && in.InputSnapshot == "in"
	})).Return(passing, nil).Once()
	in := userTests
	in.AllowTestEdits = true
	s.env.ExecuteWorkflow(CodingTask, in)
	s.NoError(s.env.GetWorkflowError())
	s.True(s.queryStatus().TestEditsAllowed)
}
