package starter

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/policy"
	"github.com/autocoder/autocoder/workflows"
)

// TestStatusShowsSafetyWarnings: the policy's warnings about an attempt's
// code are listed under its checkpoint, a long list cut with a pointer to
// the JSON, and named where the result is written.
func TestStatusShowsSafetyWarnings(t *testing.T) {
	var warnings []policy.Finding
	for i := range 12 {
		warnings = append(warnings, policy.Finding{File: "api.go", Line: i + 3, Rule: policy.Network, Message: "http.ListenAndServe opens network connections"})
	}
	cp := workflows.Checkpoint{N: 1, Step: 1, Iteration: 1, Time: time.Now(), Passed: true, Summary: "tests passed, 12 safety warning(s) to review", Warnings: warnings}
	var out bytes.Buffer
	printStatus(&out, "autocoder-1", workflows.Status{Task: "a REST API", Phase: workflows.PhaseSucceeded, MaxIterations: 1, Iteration: 1, Checkpoints: []workflows.Checkpoint{cp}})
	for _, want := range []string{
		"tests passed, 12 safety warning(s) to review",
		"~ safety: api.go:3: [network] http.ListenAndServe opens network connections",
		"~ safety: api.go:12: [network]",
		"~ and 2 more safety warning(s) (status --json lists them all)",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("status lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "api.go:13:") {
		t.Errorf("status lists more than %d warnings:\n%s", warningsShown, out.String())
	}
	out.Reset()
	reviewWarnings(&out, cp)
	if want := "the safety policy warns about 12 place(s) in checkpoint #1's code\n  ~ safety: api.go:3:"; !strings.HasPrefix(out.String(), "review before you run it: "+want) {
		t.Errorf("reviewWarnings:\n%s", out.String())
	}
}
