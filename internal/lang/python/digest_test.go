package python

import (
	"os"
	"strings"
	"testing"
)

func TestDigestKeepsEachFailuresCause(t *testing.T) {
	cases := []struct {
		file string
		want []string
	}{
		{"many-failures.txt", []string{"_ test_params[0] _", "E       assert [0, 1, 2, 3, 4, 5, ...] == []", "test_many.py:10: AssertionError"}},
		{"collection-error.txt", []string{"ERROR collecting test_collect.py", "E   ModuleNotFoundError: No module named 'nosuchmodule'"}},
		{"plain-traceback.txt", []string{`File "/work/app.py", line 4, in <module>`, "KeyError: 'b'"}},
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
	}
	if d := digest("...\n3 passed in 0.01s\n"); d != "" {
		t.Errorf("a passing run's digest: %q", d)
	}
}
