package cpp_test

import (
	"testing"

	"github.com/autocoder/autocoder/internal/lang/cpp"
	"github.com/autocoder/autocoder/internal/lang/langtest"
	"github.com/autocoder/autocoder/internal/workspace"
	"github.com/autocoder/autocoder/sandbox"
)

// runnerOn is a runner of a backend serving C/C++; a backend, an image or
// a host toolchain that is missing fails in CI.
func runnerOn(t *testing.T, backend string) sandbox.Runner {
	t.Helper()
	return langtest.Runner(t, backend, cpp.Language())
}

// run runs cmd (nil: the default test command) over files in r's cpp
// sandbox and returns its exit code and output, stderr after stdout as the
// check reads them.
func run(t *testing.T, r sandbox.Runner, files []workspace.File, cmd []string) (int, string) {
	t.Helper()
	res, out := langtest.Run(t, r, sandbox.Spec{Profile: "cpp", Files: files, Cmd: cmd})
	return res.ExitCode, out
}
