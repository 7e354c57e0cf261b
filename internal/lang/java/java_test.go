package java

import (
	"slices"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/lang/langtest"
	"github.com/autocoder/autocoder/internal/workspace"
	"github.com/autocoder/autocoder/sandbox"
)

func TestNamedSelectors(t *testing.T) {
	for _, tc := range []struct {
		tests []string
		want  []string
	}{
		{[]string{"com.example.invoice.InvoiceTest#adds"}, []string{"com.example.invoice.InvoiceTest#adds"}},
		{[]string{"InvoiceTest.discountStartsAtExactlyOneHundred"}, []string{"InvoiceTest#discountStartsAtExactlyOneHundred"}},
		{[]string{"com.example.invoice.InvoiceTest"}, []string{"com.example.invoice.InvoiceTest"}},
		{[]string{"src/test/java/com/example/invoice/InvoiceTest.java", "CalcTest.java"}, []string{"com.example.invoice.InvoiceTest", "CalcTest"}},
		{[]string{"CalcTest#adds(int, int)"}, []string{"CalcTest#adds(int, int)"}},
	} {
		cmd, err := named(tc.tests)
		if err != nil {
			t.Fatalf("named(%q): %v", tc.tests, err)
		}
		if got := cmd[4:]; !slices.Equal(got, tc.want) {
			t.Errorf("named(%q) selects %q, want %q", tc.tests, got, tc.want)
		}
	}
	for _, bad := range []string{"--help", "Calc; rm -rf /", "Calc#adds#again", ""} {
		if _, err := named([]string{bad}); err == nil {
			t.Errorf("named(%q) took a name that is no test", bad)
		}
	}
	if cmd, _ := named(nil); !slices.Equal(cmd, compileCmd) {
		t.Errorf("named(nil) = %q, want the compile command", cmd)
	}
}

func TestIsTestFile(t *testing.T) {
	langtest.CheckIsTestFile(t, isTestFile, map[string]bool{
		"src/test/java/com/x/Helpers.java": true,
		"src/main/java/com/x/Calc.java":    false,
		"CalcTest.java":                    true,
		"CalcTests.java":                   true,
		"TestCalc.java":                    true,
		"Contest.java":                     false,
		"pom.xml":                          false,
	})
}

// invoiceFix fixes examples/java's bug: the discount starts at the
// threshold itself.
var invoiceFix = langtest.Fix{Path: "src/main/java/com/example/invoice/Invoice.java",
	Old: "subtotal > DISCOUNT_THRESHOLD_CENTS", New: "subtotal >= DISCOUNT_THRESHOLD_CENTS"}

// TestRunsOnBwrap runs the example's tests with the host's JDK in the
// bwrap sandbox: it fails on the bug as the parser reads it, compiles,
// runs named tests alone, and passes once fixed, leaving the project as
// it was.
func TestRunsOnBwrap(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the JVM")
	}
	l := Language()
	r := langtest.Runner(t, "bwrap", l)
	run := func(t *testing.T, files []workspace.File, cmd []string) sandbox.Result {
		t.Helper()
		res, _ := langtest.Run(t, r, sandbox.Spec{Profile: "java", Files: files, Cmd: cmd, Collect: true})
		return res
	}
	buggy := langtest.Example(t, "java")

	t.Run("failing test", func(t *testing.T) {
		res := run(t, buggy, nil)
		out := res.Stdout + res.Stderr
		if res.ExitCode == 0 {
			t.Fatalf("exit 0 with the bug:\n%s", out)
		}
		if f := l.Failure.Parse(strings.Split(out, "\n")); f.Kind != "junit:test-fail" || !strings.Contains(f.Shape, "to be equal to") {
			t.Errorf("Parse = %+v, want the failed assertion", f)
		}
		if names := langtest.Failing(l.Failure.Failing, out); !slices.Equal(names, []string{"com.example.invoice.InvoiceTest"}) {
			t.Errorf("Failing = %q", names)
		}
		assertInOrder(t, l.Failure.Digest(out), []string{"FAILED com.example.invoice.InvoiceTest#discountStartsAtExactlyOneHundred", "InvoiceTest.java:31", "3 tests successful", "1 tests failed"})
		assertUnchanged(t, buggy, res)
	})
	t.Run("compile", func(t *testing.T) {
		if res := run(t, buggy, l.Tests.Compile); res.ExitCode != 0 {
			t.Fatalf("compile failed: %d\n%s%s", res.ExitCode, res.Stdout, res.Stderr)
		}
		broken := slices.Clone(buggy)
		broken = append(broken, workspace.File{Path: "src/main/java/com/example/invoice/Broken.java", Data: []byte("package com.example.invoice;\nclass Broken { int f() { return missing; } }\n")})
		res := run(t, broken, l.Tests.Compile)
		out := res.Stdout + res.Stderr
		if f := l.Failure.Parse(strings.Split(out, "\n")); res.ExitCode == 0 || f.Kind != "java:compile:cannot-find-symbol" {
			t.Errorf("exit %d, Parse = %+v, want a compile error:\n%s", res.ExitCode, f, out)
		}
	})
	t.Run("named", func(t *testing.T) {
		for _, tc := range []struct {
			test string
			exit bool
		}{{"InvoiceTest#discountStartsAtExactlyOneHundred", false}, {"InvoiceTest.smallOrderPaysFullPrice", true}} {
			cmd, err := l.Tests.Named([]string{tc.test})
			if err != nil {
				t.Fatal(err)
			}
			res := run(t, buggy, cmd)
			out := res.Stdout + res.Stderr
			if (res.ExitCode == 0) != tc.exit || !strings.Contains(out, "1 tests found") {
				t.Errorf("%s: exit %d, want one test run and exit 0 = %v:\n%s", tc.test, res.ExitCode, tc.exit, out)
			}
		}
	})
	t.Run("heap", func(t *testing.T) {
		// The heap is sized below the sandbox's memory: filling it is an
		// OutOfMemoryError the parser reads, not the sandbox's kill.
		hog := append(slices.Clone(buggy), workspace.File{Path: "src/test/java/com/example/invoice/HogTest.java", Data: []byte(`package com.example.invoice;
class HogTest {
    @org.junit.jupiter.api.Test
    void keepsEverything() {
        java.util.List<long[]> kept = new java.util.ArrayList<>();
        while (true) {
            kept.add(new long[1 << 20]);
        }
    }
}
`)})
		cmd, err := l.Tests.Named([]string{"HogTest"})
		if err != nil {
			t.Fatal(err)
		}
		res := run(t, hog, cmd)
		out := res.Stdout + res.Stderr
		if f := l.Failure.Parse(strings.Split(out, "\n")); res.ExitCode == 0 || f.Kind != "oom" || !strings.Contains(f.Shape, "Java heap space") {
			t.Errorf("exit %d, Parse = %+v, want the JVM's OutOfMemoryError:\n%s", res.ExitCode, f, out)
		}
	})
	t.Run("fixed", func(t *testing.T) {
		fixed := langtest.Apply(t, buggy, invoiceFix)
		res := run(t, fixed, nil)
		if out := res.Stdout + res.Stderr; res.ExitCode != 0 || !strings.Contains(out, "4 tests successful") {
			t.Fatalf("exit %d once fixed:\n%s", res.ExitCode, out)
		}
		assertUnchanged(t, fixed, res)
	})
}

// assertUnchanged checks that a run left the project's files as they
// were: the classes go to /tmp.
func assertUnchanged(t *testing.T, files []workspace.File, res sandbox.Result) {
	t.Helper()
	if res.FilesErr != nil {
		t.Fatalf("workdir not collected: %v", res.FilesErr)
	}
	var want, got []string
	for _, f := range files {
		want = append(want, f.Path)
	}
	for _, f := range res.Files {
		got = append(got, f.Path)
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("the run left %q in the project, want %q", got, want)
	}
}
