package node

import (
	"regexp"
	"testing"

	"github.com/autocoder/autocoder/internal/lang/langtest"
)

func TestNamePattern(t *testing.T) {
	tests := []struct {
		names       []string
		pattern     string
		match, miss []string
	}{
		{[]string{"applies a discount (in %)"}, `(?:applies a discount \(in %\))$`,
			[]string{"applies a discount (in %)", "invoice applies a discount (in %)"},
			[]string{"applies a discount (in %) twice"}},
		// jest's "suite › test" and node's suite prefix both end in the test's own name.
		{[]string{"cart › totals prices", "sums"}, `(?:totals prices|sums)$`,
			[]string{"cart totals prices", "totals prices", "sums"},
			[]string{"totals prices and sums too"}},
	}
	for _, tt := range tests {
		got := namePattern(tt.names)
		if got != tt.pattern {
			t.Errorf("namePattern(%q) = %q; want %q", tt.names, got, tt.pattern)
			continue
		}
		re := regexp.MustCompile(got)
		for _, m := range tt.match {
			if !re.MatchString(m) {
				t.Errorf("%q does not match %q", got, m)
			}
		}
		for _, m := range tt.miss {
			if re.MatchString(m) {
				t.Errorf("%q matches %q", got, m)
			}
		}
	}
}

func TestNamedWithoutNames(t *testing.T) {
	for _, l := range []func([]string) ([]string, error){JavaScript().Tests.Named, TypeScript().Tests.Named} {
		if cmd, err := l(nil); cmd != nil || err != nil {
			t.Errorf("Named(nil) = %q, %v; want nothing (the compile check judges)", cmd, err)
		}
	}
}

func TestIsTestFile(t *testing.T) {
	langtest.CheckIsTestFile(t, isTestFile, map[string]bool{
		"cart.test.js":            true,
		"src/money.spec.ts":       true,
		"lib/parse_test.mjs":      true,
		"test-utils.js":           true,
		"test/helpers.js":         true,
		"src/__tests__/app.jsx":   true,
		"jest.config.js":          true,
		"src/cart.js":             false,
		"src/contest.ts":          false,
		"src/latest.js":           false,
		"package.json":            false,
		"docs/testing-guide.md":   false,
		"src/attest.spec.helpers": false,
	})
}
