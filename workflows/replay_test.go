package workflows

import (
	"path/filepath"
	"testing"

	"go.temporal.io/sdk/worker"
)

// TestReplayRecordedHistories replays histories recorded from real runs, so
// a change that breaks determinism for tasks already in flight fails here.
// They cover failing then passing, each gate, a rollback, a cancel and a
// continue-as-new with signals arriving. Re-record them with:
//
//	AUTOCODER_RECORD_HISTORY=1 go test ./internal/e2e -run TestRecordReplayHistories
//
// which rewrites the files of its cases; when a change is guarded by
// GetVersion, keep the old files under other names too.
func TestReplayRecordedHistories(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
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
