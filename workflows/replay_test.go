package workflows

import (
	"os"
	"path/filepath"
	"testing"

	"go.temporal.io/sdk/worker"
)

// TestReplayRecordedHistories replays histories recorded from real runs, so
// a change that breaks determinism for tasks already in flight fails here.
// Re-record them with:
//
//	AUTOCODER_RECORD_HISTORY=1 go test ./internal/e2e -run TestTaskEndToEnd
//
// and keep the old files too when the change is guarded by GetVersion.
// With AUTOCODER_REQUIRE_HISTORIES set, as in CI, an empty testdata/ fails.
func TestReplayRecordedHistories(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 && os.Getenv("AUTOCODER_REQUIRE_HISTORIES") != "" {
		t.Fatal("no recorded histories in testdata/")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			r := worker.NewWorkflowReplayer()
			r.RegisterWorkflowWithOptions(CodingTask, RegisterOptions())
			if err := r.ReplayWorkflowHistoryFromJSONFile(nil, f); err != nil {
				t.Fatalf("replay %s: %v", f, err)
			}
		})
	}
}
