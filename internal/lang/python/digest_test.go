package python

import (
	"testing"

	"github.com/autocoder/autocoder/internal/lang/langtest"
)

func TestDigestKeepsEachFailuresCause(t *testing.T) {
	langtest.CheckDigests(t, digest, digestBytes, []langtest.DigestCase{
		{File: "many-failures.txt", Want: []string{"_ test_params[0] _", "E       assert [0, 1, 2, 3, 4, 5, ...] == []", "test_many.py:10: AssertionError"}},
		{File: "collection-error.txt", Want: []string{"ERROR collecting test_collect.py", "E   ModuleNotFoundError: No module named 'nosuchmodule'"}},
		{File: "plain-traceback.txt", Want: []string{`File "/work/app.py", line 4, in <module>`, "KeyError: 'b'"}},
	})
	if d := digest("...\n3 passed in 0.01s\n"); d != "" {
		t.Errorf("a passing run's digest: %q", d)
	}
}
