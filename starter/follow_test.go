package starter

import (
	"bufio"
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/workflows"
)

// sentSignal is one answer a gate prompt sent: its signal and the text
// typed with it.
type sentSignal struct {
	name string
	text string
}

type recordingAnswerer struct{ sent []sentSignal }

func (r *recordingAnswerer) Answer(_ context.Context, _ string, a workflows.Answer, text string) error {
	r.sent = append(r.sent, sentSignal{a.Signal, text})
	return nil
}

// gateWithAnswers returns a pending question of kind with the answers the
// workflow gives it.
func gateWithAnswers(kind string) *workflows.Approval {
	return &workflows.Approval{Kind: kind, Question: "question?", Answers: workflows.GateAnswers(kind)}
}

func TestAnswerGate(t *testing.T) {
	tests := []struct {
		name   string
		kind   string
		typed  string
		want   []sentSignal // nil: nothing sent
		err    string       // part of the error, "" for none
		screen []string     // parts of what the person sees
	}{
		{name: "enter at the policy gate asks again", kind: workflows.GatePolicy, typed: "\n\nyes\n",
			want:   []sentSignal{{workflows.SignalApprove, "yes"}},
			screen: []string{"[yes] run it anyway", "an empty answer decides nothing"}},
		{name: "y at the policy gate asks for yes in full", kind: workflows.GatePolicy, typed: "y\nYES\n",
			want:   []sentSignal{{workflows.SignalApprove, "YES"}},
			screen: []string{`type "yes" in full`}},
		{name: "enter then end of input approves nothing", kind: workflows.GatePolicy, typed: "\n",
			err: "the task still waits"},
		{name: "no input approves nothing", kind: workflows.GatePlan, typed: "",
			err: "read answer"},
		{name: "free text at the policy gate rejects with it", kind: workflows.GatePolicy, typed: "no subprocesses\n",
			want: []sentSignal{{workflows.SignalReject, "no subprocesses"}}},
		{name: "enter at the plan gate asks again", kind: workflows.GatePlan, typed: "\ny\n",
			want: []sentSignal{{workflows.SignalApprove, "y"}}},
		{name: "n rejects", kind: workflows.GateBudget, typed: "n\n",
			want: []sentSignal{{workflows.SignalReject, "n"}}},
		{name: "free text at a stuck task is guidance", kind: workflows.GateStuck, typed: "add, don't subtract\n",
			want:   []sentSignal{{workflows.SignalFeedback, "add, don't subtract"}},
			screen: []string{"[other text] go on, with the text as guidance"}},
		{name: "an answer on the last line without a newline counts", kind: workflows.GatePlan, typed: "yes",
			want: []sentSignal{{workflows.SignalApprove, "yes"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var sig recordingAnswerer
			var screen strings.Builder
			err := answerGate(context.Background(), &sig, "task-1", gateWithAnswers(tt.kind),
				bufio.NewReader(strings.NewReader(tt.typed)), &screen)
			if tt.err == "" && err != nil {
				t.Fatalf("answerGate: %v\n%s", err, screen.String())
			}
			if tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
				t.Fatalf("answerGate error = %v, want one with %q", err, tt.err)
			}
			if !reflect.DeepEqual(sig.sent, tt.want) {
				t.Errorf("sent %+v, want %+v\n%s", sig.sent, tt.want, screen.String())
			}
			for _, s := range tt.screen {
				if !strings.Contains(screen.String(), s) {
					t.Errorf("screen lacks %q:\n%s", s, screen.String())
				}
			}
		})
	}
}
