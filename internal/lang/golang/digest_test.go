package golang

import (
	"testing"

	"github.com/autocoder/autocoder/internal/lang/langtest"
)

func TestDigestKeepsTheCause(t *testing.T) {
	langtest.CheckDigests(t, digest, digestBytes, []langtest.DigestCase{
		{File: "timeout-after-failure.txt",
			Want: []string{"--- FAIL: TestWrong", "a_test.go:12: Sum(2, 2) = 5, want 4", "panic: test timed out after 10m0s", "TestDeadlock (10m0s)", "gd.TestDeadlock(", "b_test.go:15", "FAIL\tgd"},
			Not:  []string{"goroutine 30 [", "_testmain.go"}},
		{File: "fatal.txt", Want: []string{"fatal error: concurrent map writes", "--- FAIL: TestWrong"}},
		{File: "compile.txt", Want: []string{"./d.go:4:9: undefined: undefinedThing", "./d.go:7:30: cannot use 1", "FAIL\tgd [build failed]"}},
	})
	if d := digest("ok  \texample.com/a\t0.01s\n"); d != "" {
		t.Errorf("a passing run's digest: %q", d)
	}
}
