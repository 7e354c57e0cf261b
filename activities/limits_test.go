package activities

import (
	"errors"
	"strings"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/autocoder/autocoder/internal/llmtest"
)

// TestHugeAnswerFailsForGood: an answer over the size limit (4 MiB by
// default) fails the activity for good, so it is not paid for again.
func TestHugeAnswerFailsForGood(t *testing.T) {
	e := newEnv(t, llmtest.Fixed(llmtest.Reply{Content: strings.Repeat("1. Step.\n", 5<<20/9), ChunkBytes: 32 << 10}))
	_, err := e.tenv.ExecuteActivity(e.acts.Plan, planIn)
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || !app.NonRetryable() || !strings.Contains(app.Message(), "more than 4 MiB") {
		t.Fatalf("error = %v, want a final one naming the 4 MiB limit", err)
	}
}
