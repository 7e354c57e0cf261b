package java

import (
	"slices"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/lang"
	"github.com/autocoder/autocoder/internal/lang/langtest"
)

// The testdata outputs are real: the test command (and javac, java, and
// Maven offline for the surefire ones) run on this project's example with
// a bug put in.
func TestParseRealOutputs(t *testing.T) {
	for _, tc := range []struct {
		file    string
		want    lang.Finding // Keys: the first ones, in order
		failing []string
		digest  []string // in the digest, in order
	}{
		{
			file: "javac-errors.txt",
			want: lang.Finding{Kind: "java:compile:incompatible-types", Shape: "incompatible types: int cannot be converted to List<LineItem>", Keys: []string{
				"src/main/java/com/example/invoice/Invoice.java:22: error: incompatible types: int cannot be converted to List<LineItem>",
				"src/main/java/com/example/invoice/Invoice.java:32: error: cannot find symbol",
				"  symbol:   variable subtotl",
			}},
			digest: []string{"Invoice.java:22: error: incompatible types", "return lines.size();", "Invoice.java:32: error: cannot find symbol", "symbol:   variable subtotl", "location: class Invoice", "2 errors"},
		},
		{
			file:   "javac-syntax.txt",
			want:   lang.Finding{Kind: "java:compile:syntax", Shape: "<str> expected", Keys: []string{"src/main/java/com/example/invoice/Invoice.java:14: error: ';' expected"}},
			digest: []string{"Invoice.java:14: error: ';' expected", "new ArrayList<>()", "1 error"},
		},
		{
			file: "maven-compile.txt",
			want: lang.Finding{Kind: "java:compile:cannot-find-symbol", Shape: "cannot find symbol (variable)", Keys: []string{
				"[ERROR] /tmp/jx/mvn/src/main/java/com/example/invoice/Invoice.java:[32,20] cannot find symbol",
				"  symbol:   variable subtotl",
			}},
			digest: []string{"Invoice.java:[32,20] cannot find symbol", "symbol:   variable subtotl"},
		},
		{
			file: "junit-fail.txt",
			want: lang.Finding{Kind: "junit:test-fail", Shape: "Expecting: <<n>> to be equal to: <<n>> but was not.", Keys: []string{
				"=> org.opentest4j.AssertionFailedError:",
				"com.example.invoice.InvoiceTest.discountStartsAtExactlyOneHundred(InvoiceTest.java:31)",
				"JUnit Jupiter:InvoiceTest:discountStartsAtExactlyOneHundred()",
			}},
			failing: []string{"com.example.invoice.InvoiceTest"},
			digest:  []string{"FAILED com.example.invoice.InvoiceTest#discountStartsAtExactlyOneHundred", "Expecting:", "<10000L>", "<9000L>", "at com.example.invoice.InvoiceTest.discountStartsAtExactlyOneHundred(InvoiceTest.java:31)", "3 tests successful", "1 tests failed"},
		},
		{
			file: "junit-flat.txt",
			want: lang.Finding{Kind: "junit:test-fail", Shape: "Expecting: <<n>> to be equal to: <<n>> but was not.", Keys: []string{
				"=> org.opentest4j.AssertionFailedError:",
				"CalcTest.addsAssertJ(CalcTest.java:9)",
				"JUnit Jupiter:CalcTest:addsAssertJ()",
				"=> org.opentest4j.AssertionFailedError: expected: <4> but was: <5>",
			}},
			failing: []string{"CalcTest"},
			digest:  []string{"FAILED CalcTest#addsAssertJ", "at CalcTest.addsAssertJ(CalcTest.java:9)", "FAILED CalcTest#adds", "expected: <4> but was: <5>", "at CalcTest.adds(CalcTest.java:7)", "2 tests failed"},
		},
		{
			file: "junit-npe.txt",
			want: lang.Finding{Kind: "java:NullPointerException", Shape: "NullPointerException: Cannot invoke <str> because <id> is null", Keys: []string{
				`=> java.lang.NullPointerException: Cannot invoke "java.util.List.stream()" because "null" is null`,
				"com.example.invoice.Invoice.subtotalCents(Invoice.java:26)",
				"JUnit Jupiter:InvoiceTest:discountStartsAtExactlyOneHundred()",
			}},
			failing: []string{"com.example.invoice.InvoiceTest"},
			digest:  []string{"FAILED com.example.invoice.InvoiceTest#discountStartsAtExactlyOneHundred", "at com.example.invoice.Invoice.subtotalCents(Invoice.java:26)", "FAILED com.example.invoice.InvoiceTest#largeOrderGetsTenPercentOff", "FAILED com.example.invoice.InvoiceTest#smallOrderPaysFullPrice", "3 tests failed"},
		},
		{
			// JUnit does not catch an OutOfMemoryError: the launcher dies.
			file: "junit-oom.txt",
			want: lang.Finding{Kind: "oom", Shape: "OutOfMemoryError: Java heap space", Keys: []string{
				`Exception in thread "main" java.lang.OutOfMemoryError: Java heap space`,
				"com.example.invoice.HugeTest.keepsEveryInvoice(HugeTest.java:12)",
			}},
			digest: []string{"java.lang.OutOfMemoryError: Java heap space", "at com.example.invoice.HugeTest.keepsEveryInvoice(HugeTest.java:12)"},
		},
		{
			file: "uncaught-npe.txt",
			want: lang.Finding{Kind: "java:NullPointerException", Shape: "NullPointerException: Cannot invoke <str> because the return value of <str> is null", Keys: []string{
				`Exception in thread "main" java.lang.NullPointerException: Cannot invoke "java.lang.Integer.intValue()" because the return value of "java.util.Map.get(Object)" is null`,
				"App.total(App.java:5)",
			}},
			digest: []string{`Exception in thread "main" java.lang.NullPointerException`, "at App.total(App.java:5)"},
		},
		{
			file: "surefire-fail.txt",
			want: lang.Finding{Kind: "junit:test-fail", Shape: "Expecting: <<n>> to be equal to: <<n>> but was not.", Keys: []string{
				"org.opentest4j.AssertionFailedError:",
				"com.example.invoice.InvoiceTest.discountStartsAtExactlyOneHundred(InvoiceTest.java:31)",
				"[ERROR] discountStartsAtExactlyOneHundred  Time elapsed: 1.438 s  <<< FAILURE!",
			}},
			failing: []string{"InvoiceTest.discountStartsAtExactlyOneHundred"},
			digest:  []string{"FAILED com.example.invoice.InvoiceTest#discountStartsAtExactlyOneHundred", "<10000L>", "InvoiceTest.discountStartsAtExactlyOneHundred:31", "Tests run: 4, Failures: 1"},
		},
		{
			file: "surefire-npe.txt",
			want: lang.Finding{Kind: "java:NullPointerException", Shape: "NullPointerException: Cannot invoke <str> because <id> is null", Keys: []string{
				`java.lang.NullPointerException: Cannot invoke "java.util.List.stream()" because "null" is null`,
				"com.example.invoice.InvoiceTest.discountStartsAtExactlyOneHundred(InvoiceTest.java:31)",
			}},
			failing: []string{"InvoiceTest.discountStartsAtExactlyOneHundred", "InvoiceTest.largeOrderGetsTenPercentOff", "InvoiceTest.smallOrderPaysFullPrice"},
			digest:  []string{"FAILED com.example.invoice.InvoiceTest#discountStartsAtExactlyOneHundred", "FAILED com.example.invoice.InvoiceTest#smallOrderPaysFullPrice", "Errors: 3"},
		},
	} {
		t.Run(tc.file, func(t *testing.T) {
			out := langtest.Output(t, tc.file)
			l := Language()
			langtest.CheckFinding(t, l.Failure.Parse(strings.Split(out, "\n")), tc.want)
			if names := langtest.Failing(l.Failure.Failing, out); !slices.Equal(names, tc.failing) {
				t.Errorf("Failing = %q, want %q", names, tc.failing)
			}
			d := l.Failure.Digest(out)
			if len(d) > digestBudget {
				t.Errorf("Digest is %d bytes, over %d", len(d), digestBudget)
			}
			assertInOrder(t, d, tc.digest)
		})
	}
}

func TestPassingOutputIsNoFailure(t *testing.T) {
	out := langtest.Output(t, "junit-pass.txt")
	l := Language()
	if got := l.Failure.Parse(strings.Split(out, "\n")); got.Kind != "" {
		t.Errorf("Parse of a passing run = %+v, want nothing", got)
	}
	if d := l.Failure.Digest(out); d != "" {
		t.Errorf("Digest of a passing run = %q, want empty", d)
	}
	if names := langtest.Failing(l.Failure.Failing, out); len(names) > 0 {
		t.Errorf("Failing of a passing run = %q", names)
	}
}

// A run cut before its failures still fails by its counts.
func TestSummaryAloneIsATestFailure(t *testing.T) {
	out := langtest.Output(t, "junit-fail.txt")
	tail := out[strings.Index(out, "Test run finished"):]
	got := parse(strings.Split(tail, "\n"))
	if got.Kind != "junit:test-fail" {
		t.Errorf("Parse of the counts alone = %+v, want junit:test-fail", got)
	}
	if d := digest(tail); !strings.Contains(d, "1 tests failed") {
		t.Errorf("Digest of the counts alone = %q", d)
	}
}

// Many failures keep the digest within its budget, the first ones kept
// whole, and the counts at the end.
func TestDigestFitsManyFailures(t *testing.T) {
	out := langtest.Output(t, "junit-npe.txt")
	head, rest, _ := strings.Cut(out, "Failures (3):\n")
	entries, counts, _ := strings.Cut(rest, "Test run finished")
	big := head + "Failures (300):\n" + strings.Repeat(entries, 100) + "Test run finished" + counts
	d := digest(big)
	if len(d) > digestBudget {
		t.Fatalf("Digest is %d bytes, over %d", len(d), digestBudget)
	}
	assertInOrder(t, d, []string{"FAILED com.example.invoice.InvoiceTest#discountStartsAtExactlyOneHundred", "at com.example.invoice.Invoice.subtotalCents(Invoice.java:26)", "3 tests failed"})
}

func TestCompileClasses(t *testing.T) {
	for msg, want := range map[string]string{
		"cannot find symbol":                                                        "cannot-find-symbol",
		"package org.junit does not exist":                                          "missing-package",
		"method add in class Calc cannot be applied to given types;":                "wrong-arguments",
		"missing return statement":                                                  "missing-return",
		"unreported exception IOException; must be caught or declared to be thrown": "unreported-exception",
		"class Calc is public, should be declared in a file named Calc.java":        "file-name",
		"illegal start of expression":                                               "syntax",
		"something new":                                                             "other",
	} {
		if got := compileClass(msg); got != want {
			t.Errorf("compileClass(%q) = %q, want %q", msg, got, want)
		}
	}
}

// assertInOrder checks that s holds each of parts, one after the other.
func assertInOrder(t *testing.T, s string, parts []string) {
	t.Helper()
	rest := s
	for _, p := range parts {
		i := strings.Index(rest, p)
		if i < 0 {
			t.Errorf("%q missing (or out of order) in:\n%s", p, s)
			return
		}
		rest = rest[i+len(p):]
	}
}
