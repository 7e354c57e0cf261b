package workflows

import "testing"

func TestGateAnswersMatch(t *testing.T) {
	tests := []struct {
		kind, reply string
		ok          bool   // the reply is an answer at all
		signal      string // "" for an answer that decides nothing
	}{
		{GatePolicy, "", false, ""},
		{GatePolicy, "  \t", false, ""},
		{GatePolicy, "y", true, ""},
		{GatePolicy, "Yes", true, SignalApprove},
		{GatePolicy, "no", true, SignalReject},
		{GatePolicy, "not with subprocess", true, SignalReject},
		{GatePlan, "", false, ""},
		{GatePlan, "y", true, SignalApprove},
		{GatePlan, "use argparse", true, SignalReject},
		{GateBudget, "N", true, SignalReject},
		{GateStuck, "", false, ""},
		{GateStuck, "yes", true, SignalApprove},
		{GateStuck, "n", true, SignalReject},
		{GateStuck, "try integers", true, SignalFeedback},
	}
	for _, tt := range tests {
		p := Approval{Kind: tt.kind, Answers: GateAnswers(tt.kind)}
		a, ok := p.Match(tt.reply)
		if ok != tt.ok || a.Signal != tt.signal {
			t.Errorf("%s gate, reply %q: answer %+v (%v), want signal %q (%v)", tt.kind, tt.reply, a, ok, tt.signal, tt.ok)
		}
	}
	for _, kind := range []string{GatePlan, GatePolicy, GateBudget, GateStuck} {
		p := Approval{Kind: kind, Answers: GateAnswers(kind)}
		if got, want := p.takesGuidance(), kind == GateStuck; got != want {
			t.Errorf("%s gate takes guidance = %v, want %v", kind, got, want)
		}
	}
}
