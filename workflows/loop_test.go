package workflows

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/autocoder/autocoder/activities"
	"github.com/autocoder/autocoder/internal/llm"
)

// traceStarts records each activity as it starts, with what the status
// says the task is doing then.
func (s *codingTaskSuite) traceStarts() *[]string {
	var trace []string
	record := func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		trace = append(trace, fmt.Sprintf("%s: %s", info.ActivityType.Name, s.queryStatus().Doing))
	}
	s.env.SetOnActivityStartedListener(record)
	s.env.SetOnLocalActivityStartedListener(func(info *activity.Info, ctx context.Context, _ []any) { record(info, ctx, nil) })
	return &trace
}

// onSandbox expects one sandbox call matching in (its position, call and
// snapshot) and answers with snapshot.
func (s *codingTaskSuite) onSandbox(in activities.SandboxCallInput, snapshot string) {
	s.env.OnActivity(a.SandboxCall, mock.Anything, mock.MatchedBy(func(got activities.SandboxCallInput) bool {
		return got.Transcript == in.Transcript && got.Position == in.Position && got.CallID == in.CallID && got.Snapshot == in.Snapshot
	})).Return(activities.SandboxCallOutput{Snapshot: snapshot, Length: in.Position + 1}, nil).Once()
}

// TestCallsRouteInOrder: a turn's calls get their results in the model's
// order, each at its position and on the workspace the calls before it
// left: consecutive workspace tools in one RunTools, run and run_tests in
// the sandbox, finish acknowledged; then the step's check.
func (s *codingTaskSuite) TestCallsRouteInOrder() {
	const tr = "default-test-workflow-id/1"
	s.onPlan("fix the api")
	s.onTurn(activities.ModelTurnOutput{Calls: []activities.CallSummary{
		{ID: "r1", Name: "read", Label: "read app/models.py"},
		{ID: "r2", Name: "search", Label: "search def total"},
		{ID: "x1", Name: "run", Command: "pytest -x tests/test_api.py", Label: "run pytest -x tests/test_api.py"},
		{ID: "w1", Name: "write", Label: "write app/models.py"},
		{ID: "t1", Name: "run_tests", Label: "run the tests"},
		{ID: "f1", Name: "finish"},
	}, Finish: &activities.FinishArgs{Summary: "fixed total"}})
	s.env.OnActivity(a.RunTools, mock.Anything, activities.RunToolsInput{Transcript: tr, Position: 3, Snapshot: "in", CallIDs: []string{"r1", "r2"}}).
		Return(activities.RunToolsOutput{Snapshot: "in", Length: 5}, nil).Once()
	s.onSandbox(activities.SandboxCallInput{Transcript: tr, Position: 5, CallID: "x1", Snapshot: "in"}, "s-run")
	s.env.OnActivity(a.RunTools, mock.Anything, activities.RunToolsInput{Transcript: tr, Position: 6, Snapshot: "s-run", CallIDs: []string{"w1"}}).
		Return(activities.RunToolsOutput{Snapshot: "s-w", Length: 7}, nil).Once()
	s.onSandbox(activities.SandboxCallInput{Transcript: tr, Position: 7, CallID: "t1", Snapshot: "s-w"}, "s-w")
	s.onCheck("s-w", passing)
	trace := s.traceStarts()

	in := input
	in.InputSnapshot = "in"
	s.env.ExecuteWorkflow(CodingTask, in)

	s.NoError(s.env.GetWorkflowError())
	s.Equal([]string{
		"Plan: ",
		"OpenStep: read the project",
		"ModelTurn: waiting for the model",
		"RunTools: read app/models.py, search def total",
		"SandboxCall: run pytest -x tests/test_api.py",
		"RunTools: write app/models.py",
		"SandboxCall: run the tests",
		"AppendMessages: finish",
		"Check: ",
		"SaveLessons: ",
		"WorkerWebhooks: ", // at the end, asked once: none
	}, *trace)
	s.Require().Len(s.appended, 1)
	s.Equal(8, s.appended[0].Position)
	s.Equal("f1", s.appended[0].Messages[0].Result.CallID)
	s.Equal(1, s.queryStatus().Turn)
}

// TestAttemptEndsAfterMaxTurns: an attempt that never finishes is checked
// after its last allowed turn.
func (s *codingTaskSuite) TestAttemptEndsAfterMaxTurns() {
	s.onPlan("step")
	for i := range 2 {
		s.onTurn(activities.ModelTurnOutput{Calls: []activities.CallSummary{{ID: fmt.Sprint("r", i), Name: "read", Args: `{"path":"a.py"}`}}})
		s.onTools("base")
	}
	s.onCheck("base", passing)
	in := input
	in.InputSnapshot = "base"
	in.Agent.MaxTurns = 2
	s.env.ExecuteWorkflow(CodingTask, in)
	s.NoError(s.env.GetWorkflowError())
}

// TestSummarizeWhenTheConversationOutgrowsTheBudget: a turn that does not
// fit has the older turns summarized, then is asked again with the summary.
func (s *codingTaskSuite) TestSummarizeWhenTheConversationOutgrowsTheBudget() {
	summary := activities.TurnSummary{Key: "memo", Covers: 2}
	s.onPlan("step")
	s.onTurn(activities.ModelTurnOutput{NeedsSummary: true, SummarizeTo: 2})
	s.env.OnActivity(a.Summarize, mock.Anything, activities.SummarizeInput{Transcript: "default-test-workflow-id/1", Position: 2}).
		Return(activities.SummarizeOutput{Summary: summary, Usage: turnUsage}, nil).Once()
	s.env.OnActivity(a.ModelTurn, mock.Anything, mock.MatchedBy(func(in activities.ModelTurnInput) bool {
		return in.Summary != nil && *in.Summary == summary && in.Position == 2 && in.ContextTokens == 5000
	})).Return(activities.ModelTurnOutput{Calls: []activities.CallSummary{writeCall, finishCall}, Length: 3, Usage: turnUsage}, nil).Once()
	s.onTools("s1")
	s.onCheck("s1", passing)
	in := input
	in.Agent.ContextTokens = 5000
	s.env.ExecuteWorkflow(CodingTask, in)
	s.NoError(s.env.GetWorkflowError())
	st := s.queryStatus()
	s.Equal(1, st.Turn)
	s.Equal(3, st.Usage.Calls) // plan, summary, turn
}

// TestModelWithoutToolCallingUsesFencedBlocks: a model that cannot call
// tools gets today's one-answer attempts, for this attempt and the next.
func (s *codingTaskSuite) TestModelWithoutToolCallingUsesFencedBlocks() {
	s.onPlan("step")
	s.env.OnActivity(a.ModelTurn, mock.Anything, mock.Anything).Return(activities.ModelTurnOutput{},
		temporal.NewNonRetryableApplicationError("model ollama:x has no native tool calling", activities.ErrTypeNoToolCalling, nil)).Once()
	s.env.OnActivity(a.Generate, mock.Anything, mock.MatchedBy(func(in activities.GenerateInput) bool { return in.Iteration == 1 && in.Failure == nil })).
		Return(activities.GenerateOutput{SnapshotID: "s1"}, nil).Once()
	s.onCheck("s1", failing)
	s.env.OnActivity(a.Generate, mock.Anything, mock.MatchedBy(func(in activities.GenerateInput) bool {
		return in.Iteration == 2 && in.Failure != nil && in.Failure.Output == failing.Output && in.BaseSnapshot == "s1"
	})).Return(activities.GenerateOutput{SnapshotID: "s2", Reflection: "off by one"}, nil).Once()
	s.onCheck("s2", passing)

	s.env.ExecuteWorkflow(CodingTask, input)

	s.NoError(s.env.GetWorkflowError())
	var res TaskResult
	s.NoError(s.env.GetWorkflowResult(&res))
	s.Equal("s2", res.SnapshotID)
	s.Equal(2, res.Iterations)
}

// TestStepsBeforeTheLastAreJudgedByTheirOwnTests: step 1 of 2 is checked
// with the tests its finish named; the last step by the whole command.
func (s *codingTaskSuite) TestStepsBeforeTheLastAreJudgedByTheirOwnTests() {
	s.onPlan("add the model", "wire the api")
	s.onAttempt("s1")
	s.env.OnActivity(a.Check, mock.Anything, mock.MatchedBy(func(in activities.CheckInput) bool {
		return in.SnapshotID == "s1" && in.Scope == activities.ScopeStep && len(in.Tests) == 1 && in.Tests[0] == "test_calc.py"
	})).Return(passing, nil).Once()
	s.onAttempt("s2")
	s.env.OnActivity(a.Check, mock.Anything, mock.MatchedBy(func(in activities.CheckInput) bool {
		return in.SnapshotID == "s2" && in.Scope == activities.ScopeAll && in.Tests == nil && in.TestCmd == "pytest"
	})).Return(passing, nil).Once()
	in := input
	in.TestCmd = "pytest"
	s.env.ExecuteWorkflow(CodingTask, in)
	s.NoError(s.env.GetWorkflowError())
	s.Len(s.opened, 2)
}

// TestCommandGate: with approval on, a command the allow-list covers runs
// at once; another waits for a person, and declined, the model is told so
// in the call's result instead.
func (s *codingTaskSuite) TestCommandGate() {
	const tr = "default-test-workflow-id/1"
	s.onPlan("step")
	s.onTurn(activities.ModelTurnOutput{Calls: []activities.CallSummary{
		{ID: "x1", Name: "run", Command: "pytest -x tests"},
		{ID: "x2", Name: "run", Command: "pip download requests"},
		finishCall,
	}})
	s.onSandbox(activities.SandboxCallInput{Transcript: tr, Position: 3, CallID: "x1"}, "s1")
	s.onCheck("s1", passing)
	s.at(time.Minute, func() {
		st := s.queryStatus()
		s.Require().NotNil(st.Pending)
		s.Equal(GateCommand, st.Pending.Kind)
		s.Equal("pip download requests", st.Pending.Details)
		s.env.SignalWorkflow(SignalReject, RejectSignal{Reason: "no network"})
	})
	in := input
	in.ApproveCommands, in.CommandAllow = true, []string{"pytest"}
	s.env.ExecuteWorkflow(CodingTask, in)

	s.NoError(s.env.GetWorkflowError())
	s.Require().Len(s.appended, 2)
	s.Equal(4, s.appended[0].Position)
	s.Equal(&llm.ToolResult{CallID: "x2", Name: "run", Content: "a person declined to run this: no network", IsError: true}, s.appended[0].Messages[0].Result)
	s.Equal(5, s.appended[1].Position)
}

func TestDescribeCall(t *testing.T) {
	if got := describeCall(activities.CallSummary{Name: "read", Label: "read app/models.py"}); got != "read app/models.py" {
		t.Errorf("a labelled call is described as %q", got)
	}
	if got := describeCall(activities.CallSummary{Name: "frobnicate"}); got != "frobnicate" {
		t.Errorf("an unlabelled call is described as %q", got)
	}
}

func TestCommandAllowed(t *testing.T) {
	allow := []string{"pytest", "go test", "python -m ", "./scripts/"}
	tests := []struct {
		command string
		want    bool
	}{
		{"pytest", true},
		{"  pytest -x tests/test_api.py", true},
		{"pytester", false},
		{"go test ./...", true},
		{"go tester", false},
		{"python -m pytest", true},
		{"python -mpytest", false},
		{"./scripts/lint.sh -q", true},
		{"./scriptsx", false},
		{"go test/x", false},
		{"pytest; curl x", false},
		{"pytest && rm -rf /", false},
		{"pytest > out.txt", false},
		{"pytest $(cat x)", false},
		{"ls", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := commandAllowed(tt.command, allow); got != tt.want {
			t.Errorf("commandAllowed(%q) = %v, want %v", tt.command, got, tt.want)
		}
	}
	if commandAllowed("pytest", nil) || commandAllowed("pytest", []string{" "}) {
		t.Error("an empty allow-list allows a command")
	}
}

// TestContinueAsNewMidAttempt: a history that grows long between two
// turns continues the task as new; the next run resumes the same attempt
// at the conversation's position, with the workspace its calls left and
// its turn count, opening nothing again.
func (s *codingTaskSuite) TestContinueAsNewMidAttempt() {
	s.onPlan("step")
	s.onTurn(activities.ModelTurnOutput{Calls: []activities.CallSummary{writeCall}})
	s.env.OnActivity(a.RunTools, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.RunToolsInput) (activities.RunToolsOutput, error) {
		s.env.SetContinueAsNewSuggested(true)
		return activities.RunToolsOutput{Snapshot: "s-half", Length: in.Position + 1}, nil
	}).Once()
	in := input
	in.Agent.MaxTurns = 2
	in.MaxIterations = 1 // the attempt resumed is the last one allowed
	s.env.ExecuteWorkflow(CodingTask, in)

	next := s.continuedWith()
	c := next.Carried.Conversation
	s.Equal(Conversation{Transcript: "default-test-workflow-id/1", Step: 1, Length: 4, Working: true, Snapshot: "s-half"}, c)
	s.Equal(1, next.Carried.Status.Turn)
	s.Equal(1, next.Carried.Status.Iteration)

	s.SetupTest()
	s.env.OnActivity(a.ModelTurn, mock.Anything, mock.MatchedBy(func(in activities.ModelTurnInput) bool {
		return in.Transcript == c.Transcript && in.Position == 4 && in.Attempt == 1
	})).Return(activities.ModelTurnOutput{Calls: []activities.CallSummary{finishCall}, Length: 5}, nil).Once()
	s.onCheck("s-half", passing)
	s.env.ExecuteWorkflow(CodingTask, next)

	s.NoError(s.env.GetWorkflowError())
	var res TaskResult
	s.NoError(s.env.GetWorkflowResult(&res))
	s.Equal("s-half", res.SnapshotID)
	s.Equal(1, res.Iterations)
	s.Equal(2, res.Status.Turn)
	s.Equal(2, res.Status.Runs)
	s.Empty(s.opened)
	s.Require().Len(s.appended, 1)
	s.Equal(5, s.appended[0].Position)
}

// TestCancelWhileTheModelThinks: a cancel during a model turn stops the
// task once the turn is in: its calls never run, and the attempt is
// checkpointed untested.
func (s *codingTaskSuite) TestCancelWhileTheModelThinks() {
	s.onPlan("step")
	s.onTurn(activities.ModelTurnOutput{Calls: []activities.CallSummary{writeCall, finishCall}}).After(time.Minute)
	s.at(30*time.Second, s.signal(SignalCancel, CancelSignal{Reason: "wrong repo"}))
	in := input
	in.InputSnapshot = "in"
	s.env.ExecuteWorkflow(CodingTask, in)

	app := s.requireAppError(ErrTypeCancelled)
	s.Contains(app.Message(), "wrong repo")
	st := s.queryStatus()
	s.Require().Len(st.Checkpoints, 1)
	s.Equal("in", st.Checkpoints[0].SnapshotID)
	s.Empty(s.tools)
	s.Empty(s.appended)
}

// TestGuidanceReachesTheNextTurn: feedback that comes while the model
// works is passed on before its next turn, in the same attempt, once.
func (s *codingTaskSuite) TestGuidanceReachesTheNextTurn() {
	const tr = "default-test-workflow-id/1"
	s.onPlan("step")
	s.onTurn(activities.ModelTurnOutput{Calls: []activities.CallSummary{{ID: "r1", Name: "read", Label: "read calc.py"}}}).After(time.Minute)
	s.onTools("in")
	s.onTurn(activities.ModelTurnOutput{Calls: []activities.CallSummary{{ID: "r2", Name: "read", Label: "read calc.py"}}})
	s.onTools("in")
	s.onAttempt("s1")
	s.onCheck("s1", passing)
	s.at(30*time.Second, s.signal(SignalFeedback, FeedbackSignal{Text: "use integers"}))
	in := input
	in.InputSnapshot = "in"
	s.env.ExecuteWorkflow(CodingTask, in)

	s.NoError(s.env.GetWorkflowError())
	var told []activities.AppendMessagesInput
	for _, in := range s.appended {
		if in.Messages[0].Role == llm.RoleUser {
			told = append(told, in)
		}
	}
	s.Require().Len(told, 1, "guidance is passed on once")
	s.Equal(tr, told[0].Transcript)
	s.Equal(4, told[0].Position) // after the first turn (3) and its result
	s.Contains(told[0].Messages[0].Text, "A person says:\n- use integers")
}

// TestDescribeCallsIsBounded: a run of workspace calls is named call by
// call, and a long run is cut after whole labels with how many more there
// are, so the RunTools summary stays one readable line.
func TestDescribeCallsIsBounded(t *testing.T) {
	reads := func(n int) []activities.CallSummary {
		calls := make([]activities.CallSummary, n)
		for i := range calls {
			calls[i] = activities.CallSummary{Name: "read", Label: fmt.Sprintf("read app/module_%02d.py", i)}
		}
		return calls
	}
	for _, tc := range []struct {
		name  string
		calls []activities.CallSummary
		want  string
	}{
		{"one", reads(1), "read app/module_00.py"},
		{"a few", []activities.CallSummary{{Name: "read", Label: "read app/models.py"}, {Name: "edit", Label: "edit app/models.py"}, {Name: "list"}},
			"read app/models.py, edit app/models.py, list"},
		{"many", reads(40), "read app/module_00.py, read app/module_01.py, read app/module_02.py, read app/module_03.py, " +
			"read app/module_04.py, read app/module_05.py, read app/module_06.py, read app/module_07.py and 32 more"},
		{"long labels", []activities.CallSummary{{Label: strings.Repeat("a", 150)}, {Label: strings.Repeat("b", 150)}},
			strings.Repeat("a", 150) + " and 1 more"},
	} {
		got := describeCalls(tc.calls)
		if got != tc.want {
			t.Errorf("%s: describeCalls = %q, want %q", tc.name, got, tc.want)
		}
		if len(got) > callsLabelBytes {
			t.Errorf("%s: %d bytes, over %d", tc.name, len(got), callsLabelBytes)
		}
	}
}

// TestMCPCallsRouteToMCPCall: a call of an MCP tool runs as MCPCall, at
// its position, between the workspace calls around it; one whose server
// asks waits for a person, and declined, the model is told so.
func (s *codingTaskSuite) TestMCPCallsRouteToMCPCall() {
	const tr = "default-test-workflow-id/1"
	s.onPlan("step")
	s.onTurn(activities.ModelTurnOutput{Calls: []activities.CallSummary{
		{ID: "r1", Name: "read", Label: "read a.py"},
		{ID: "m1", Name: "mcp__docs__lookup", Label: `mcp__docs__lookup {"query":"split"}`},
		{ID: "m2", Name: "mcp__tracker__close", Label: `mcp__tracker__close {"id":7}`, Ask: true},
		{ID: "r2", Name: "read", Label: "read b.py"},
		finishCall,
	}})
	s.env.OnActivity(a.RunTools, mock.Anything, activities.RunToolsInput{Transcript: tr, Position: 3, Snapshot: "in", CallIDs: []string{"r1"}}).
		Return(activities.RunToolsOutput{Snapshot: "in", Length: 4}, nil).Once()
	s.env.OnActivity(a.MCPCall, mock.Anything, activities.MCPCallInput{Transcript: tr, Position: 4, CallID: "m1"}).
		Return(activities.MCPCallOutput{Length: 5}, nil).Once()
	s.env.OnActivity(a.RunTools, mock.Anything, activities.RunToolsInput{Transcript: tr, Position: 6, Snapshot: "in", CallIDs: []string{"r2"}}).
		Return(activities.RunToolsOutput{Snapshot: "in", Length: 7}, nil).Once()
	s.onCheck("in", passing)
	s.at(time.Minute, func() {
		st := s.queryStatus()
		s.Require().NotNil(st.Pending)
		s.Equal(GateCommand, st.Pending.Kind)
		s.Equal(`mcp__tracker__close {"id":7}`, st.Pending.Details)
		s.env.SignalWorkflow(SignalReject, RejectSignal{Reason: "not yet"})
	})
	trace := s.traceStarts()
	in := input
	in.InputSnapshot = "in"
	s.env.ExecuteWorkflow(CodingTask, in)

	s.NoError(s.env.GetWorkflowError())
	s.Contains(*trace, `MCPCall: mcp__docs__lookup {"query":"split"}`)
	s.Require().Len(s.appended, 2)
	s.Equal(5, s.appended[0].Position)
	s.Equal(&llm.ToolResult{CallID: "m2", Name: "mcp__tracker__close", Content: "a person declined this call: not yet", IsError: true}, s.appended[0].Messages[0].Result)
}

// TestInstallCallsRunInTheSandbox: an install call runs as SandboxCall,
// between the workspace calls around it, its workspace the next call's;
// the model turn is told the task's language, for the tools it offers.
// With approval on, every install waits for a person, whatever the
// allow-list; declined, the model is told so in the call's result.
func (s *codingTaskSuite) TestInstallCallsRunInTheSandbox() {
	const tr = "default-test-workflow-id/1"
	s.onPlan("step")
	s.onTurn(activities.ModelTurnOutput{Calls: []activities.CallSummary{
		{ID: "i1", Name: "install", Command: "install requests==2.32.3", Label: "install requests==2.32.3"},
		{ID: "r1", Name: "read", Label: "read requirements.txt"},
		{ID: "i2", Name: "install", Command: "install evil==1.0", Label: "install evil==1.0"},
		finishCall,
	}}).Run(func(args mock.Arguments) {
		s.Equal("python", args.Get(1).(activities.ModelTurnInput).Language)
	})
	s.onSandbox(activities.SandboxCallInput{Transcript: tr, Position: 3, CallID: "i1", Snapshot: "in"}, "s-installed")
	s.env.OnActivity(a.RunTools, mock.Anything, activities.RunToolsInput{Transcript: tr, Position: 4, Snapshot: "s-installed", CallIDs: []string{"r1"}}).
		Return(activities.RunToolsOutput{Snapshot: "s-installed", Length: 5}, nil).Once()
	s.onCheck("s-installed", passing)
	asked := 0
	for _, at := range []time.Duration{time.Minute, 2 * time.Minute} {
		s.at(at, func() {
			st := s.queryStatus()
			s.Require().NotNil(st.Pending)
			s.Equal(GateCommand, st.Pending.Kind)
			asked++
			if st.Pending.Details == "install requests==2.32.3" {
				s.env.SignalWorkflow(SignalApprove, ApproveSignal{})
				return
			}
			s.Equal("install evil==1.0", st.Pending.Details)
			s.env.SignalWorkflow(SignalReject, RejectSignal{Reason: "not that one"})
		})
	}
	trace := s.traceStarts()
	in := input
	in.InputSnapshot = "in"
	in.ApproveCommands, in.CommandAllow = true, []string{"install"}
	s.env.ExecuteWorkflow(CodingTask, in)

	s.NoError(s.env.GetWorkflowError())
	s.Equal(2, asked)
	s.Contains(*trace, "SandboxCall: install requests==2.32.3")
	s.Require().Len(s.appended, 2)
	s.Equal(5, s.appended[0].Position)
	s.Equal(&llm.ToolResult{CallID: "i2", Name: "install", Content: "a person declined this install: not that one", IsError: true}, s.appended[0].Messages[0].Result)
}
