package golang

import (
	"os"
	"strings"
	"testing"
)

func TestDigestKeepsTheCause(t *testing.T) {
	cases := []struct {
		file      string
		want, not []string
	}{
		{"timeout-after-failure.txt",
			[]string{"--- FAIL: TestWrong", "a_test.go:12: Sum(2, 2) = 5, want 4", "panic: test timed out after 10m0s", "TestDeadlock (10m0s)", "gd.TestDeadlock(", "b_test.go:15", "FAIL\tgd"},
			[]string{"goroutine 30 [", "_testmain.go"}},
		{"fatal.txt", []string{"fatal error: concurrent map writes", "--- FAIL: TestWrong"}, nil},
		{"compile.txt", []string{"./d.go:4:9: undefined: undefinedThing", "./d.go:7:30: cannot use 1", "FAIL\tgd [build failed]"}, nil},
	}
	for _, tc := range cases {
		out, err := os.ReadFile("testdata/" + tc.file)
		if err != nil {
			t.Fatal(err)
		}
		d := digest(string(out))
		if len(d) > digestBytes {
			t.Errorf("%s: digest of %d bytes, over %d", tc.file, len(d), digestBytes)
		}
		for _, w := range tc.want {
			if !strings.Contains(d, w) {
				t.Errorf("%s: digest lacks %q:\n%s", tc.file, w, d)
			}
		}
		for _, n := range tc.not {
			if strings.Contains(d, n) {
				t.Errorf("%s: digest keeps the dump's %q:\n%s", tc.file, n, d)
			}
		}
	}
	if d := digest("ok  \texample.com/a\t0.01s\n"); d != "" {
		t.Errorf("a passing run's digest: %q", d)
	}
}
