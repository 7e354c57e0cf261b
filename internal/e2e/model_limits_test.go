package e2e

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/llmtest"
	"github.com/autocoder/autocoder/workflows"
)

// TestHangingModelIsCutOffAndShown: a model that never answers is cut
// off after the first-byte limit (5 s here, not the activity's 10
// minutes) and the call retried, while `status` says how long the task
// has been waiting for the model and at which attempt.
func TestHangingModelIsCutOffAndShown(t *testing.T) {
	t.Parallel()
	c := newCluster(t, llmtest.Fixed(llmtest.Reply{Content: "1. Write it.", Delay: time.Hour}),
		"AUTOCODER_MODEL_FIRST_BYTE_TIMEOUT=5s")
	id := c.start("--lang", "python", pythonScenario.task)

	waitingLine := regexp.MustCompile(`(?m)^model: +waiting for the model for \d+s \(attempt [2-6] of 6\)$`)
	deadline := time.Now().Add(time.Minute)
	for {
		out := c.mustCLI("status", id)
		if waitingLine.MatchString(out) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("status never showed a retried call waiting for the model; last:\n%s", out)
		}
		time.Sleep(300 * time.Millisecond)
	}
	var st struct {
		Phase     string
		ModelCall *struct {
			Activity    string
			Attempt     int
			MaxAttempts int
			Since       time.Time
			LastFailure string
		}
	}
	if err := json.Unmarshal([]byte(c.mustCLI("status", id, "--json")), &st); err != nil {
		t.Fatal(err)
	}
	// Between attempts the call waits for its retry, after the limit's failure.
	mc := st.ModelCall
	if st.Phase != "planning" || mc == nil || mc.Activity != "Plan" || mc.Attempt < 2 || mc.MaxAttempts != 6 ||
		(mc.Since.IsZero() && !strings.Contains(mc.LastFailure, "sent nothing for 5s")) {
		t.Errorf("status --json = %+v, model call %+v; want the plan's call at attempt 2 or later of 6", st, mc)
	}
	if n := c.model.Calls(); n < 2 {
		t.Errorf("model calls = %d, want the hanging one retried", n)
	}
	c.mustCLI("cancel", id)
}

// TestPausingStreamKeepsItsAttempt: a streamed answer that pauses longer
// than the activity's heartbeat timeout (5 s) but within the idle limit
// is one call: the activity heartbeats while it waits.
func TestPausingStreamKeepsItsAttempt(t *testing.T) {
	t.Parallel()
	sc := pythonScenario
	rest := sc.script()
	c := newCluster(t, func(req llmtest.ChatRequest) llmtest.Reply {
		if strings.Contains(req.LastUser(), planMarker) {
			return llmtest.Reply{Content: sc.plan, Stall: 8 * time.Second, StallAfter: 8}
		}
		return rest(req)
	})
	id := c.start("--lang", "python", sc.task)
	c.waitFor(id, "the plan", func(st workflows.Status) bool { return len(st.Plan) > 0 })
	plans := 0
	for _, r := range c.model.Requests() {
		if strings.Contains(r.LastUser(), planMarker) {
			plans++
		}
	}
	if plans != 1 {
		t.Errorf("the plan was asked for %d times, want once", plans)
	}
	c.mustCLI("cancel", id)
}

// TestFullDiskFailsBeforeTheModelIsPaid: a worker whose data dir has less
// free space than it needs fails the task at once, saying where and how
// much, without a single model call.
func TestFullDiskFailsBeforeTheModelIsPaid(t *testing.T) {
	t.Parallel()
	c := newCluster(t, pythonScenario.script(), "AUTOCODER_MIN_FREE_SPACE=1000000GiB")
	var dataDir string
	for _, kv := range c.env {
		if v, ok := strings.CutPrefix(kv, "AUTOCODER_DATA_DIR="); ok {
			dataDir = v
		}
	}
	id := c.start("--lang", "python", pythonScenario.task)
	st := c.waitFor(id, "the failure", phase(workflows.PhaseFailed))
	if want := "not enough free disk space in " + dataDir; !strings.Contains(st.Error, want) || !strings.Contains(st.Error, "1000000 GiB needed") {
		t.Errorf("error = %q, want it to say %q and the space needed", st.Error, want)
	}
	if n := c.model.Calls(); n != 0 {
		t.Errorf("model calls = %d, want none", n)
	}
}
