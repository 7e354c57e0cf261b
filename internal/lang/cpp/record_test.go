package cpp_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/autocoder/autocoder/internal/lang/langtest"
)

// TestRecordOutputs re-records testdata/output from the projects under
// testdata/projects, each run by the default test command in the bwrap
// sandbox: the real outputs the parser is tested on.
//
//	AUTOCODER_RECORD_OUTPUTS=1 go test ./internal/lang/cpp -run TestRecordOutputs
func TestRecordOutputs(t *testing.T) {
	if os.Getenv("AUTOCODER_RECORD_OUTPUTS") == "" {
		t.Skip("set AUTOCODER_RECORD_OUTPUTS=1 to re-record testdata/output")
	}
	dirs, err := os.ReadDir(filepath.Join("testdata", "projects"))
	if err != nil {
		t.Fatal(err)
	}
	r := runnerOn(t, "bwrap")
	for _, d := range dirs {
		code, out := run(t, r, langtest.Project(t, filepath.Join("testdata", "projects", d.Name())), nil)
		if code == 0 {
			t.Errorf("%s: passed; every recorded project fails", d.Name())
		}
		if err := os.WriteFile(filepath.Join("testdata", "output", d.Name()+".txt"), []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
