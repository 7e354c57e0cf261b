package workflows

import (
	"strings"

	"go.temporal.io/sdk/workflow"

	"github.com/autocoder/autocoder/activities"
)

// GateIntegrity asks a person whether an attempt that passed the user's
// tests as they were, but changed them, may be the task's result.
const GateIntegrity = "integrity"

// protectTests has a check judge the attempt by the user's tests as they
// were at the start.
func (t *task) protectTests(in *activities.CheckInput) {
	in.InputSnapshot, in.Protect, in.AllowTestEdits = t.start(), t.in.Protect, t.in.AllowTestEdits
}

// restoreUsersTests has the next attempt start from the last one with the
// user's tests put back as they were, so the model sees them as the judge
// runs them.
func (t *task) restoreUsersTests(result activities.TestSummary) {
	if result.Restored != "" {
		t.Base = result.Restored
	}
}

// noteFindings remembers a check that found code the safety policy denies
// (approved by a person or not) or a change to the user's tests: a lesson
// of such a task would carry its plan or fix into other tasks' prompts.
// Results recorded before Policy existed still say PolicyOnly.
func (t *task) noteFindings(result activities.TestSummary) {
	if result.Policy || result.PolicyOnly || len(result.Findings) > 0 {
		t.Memory.Findings = true
	}
}

// noLessonFrom forgets a failure that was tampering with the user's tests:
// a later pass would teach a "fix" that is only putting them back.
func (t *task) noLessonFrom(result activities.TestSummary) {
	if len(result.Findings) > 0 {
		t.Memory.Pending = nil
	}
}

// acceptTampered runs when the iterations are spent. If the last attempt
// passed the user's tests as they were but changed them, only a person
// can let it be the step's result. It reports whether the task goes on
// without failing: accepted, or moved back by a rollback meanwhile.
func (t *task) acceptTampered(ctx workflow.Context) (bool, error) {
	lt, n := t.Status.LastTest, len(t.Status.Checkpoints)
	if lt == nil || len(lt.Findings) == 0 || !lt.TestsPassed || n == 0 || t.Status.Checkpoints[n-1].Step != t.Status.Step {
		return false, nil
	}
	var details strings.Builder
	for _, f := range lt.Findings {
		details.WriteString("- " + f.String() + "\n")
	}
	details.WriteString("The user's test files are not overwritten unless the task allows test edits.")
	d, err := t.ask(ctx, GateIntegrity,
		"The code passes the user's tests as they were, but the last attempt changed them. Accept it anyway?", details.String())
	switch {
	case err != nil:
		return false, err
	case t.rollback != nil:
		return true, nil
	case !d.approved:
		return false, nil
	}
	t.Status.TestEditsApproved = orText(d.text, "approved")
	t.Base = t.Status.Checkpoints[n-1].SnapshotID // the attempt as it was, not as restored for the judge
	t.Status.Step++
	t.Reflection, t.ReflectOn, t.Memory.FailureLessons = "", nil, ""
	return true, nil
}
