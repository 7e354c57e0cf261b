package signature

import (
	"github.com/autocoder/autocoder/internal/lang"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestNormLine(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{`KeyError: 'colour'`, `KeyError: <id>`},
		{`KeyError: '/home'`, `KeyError: <str>`},
		{`TypeError: can't multiply sequence by non-int of type 'str'`, `TypeError: can't multiply sequence by non-int of type <id>`},
		{`AttributeError: 'NoneType' object has no attribute 'name'`, `AttributeError: 'NoneType' object has no attribute <id>`},
		{`E     File "/tmp/x1/vectors.py", line 12`, `E File <path>, line <n>`},
		{`./accounts.go:13:8: declared and not used: err`, `<path>:<n>:<n>: declared and not used: err`},
		{`FAILED test_calc.py::test_add[1-2] - assert 5 == 6`, `FAILED <path>::<id> - assert <n> == <n>`},
		{`testing.tRunner.func1.2({0x574440, 0xcfd8115c000})`, `testing.tRunner.func1.<n>({<addr>, <addr>})`},
		{`goroutine 19 [running]:`, `goroutine <n> [running]:`},
		{`--- FAIL: TestAdd (0.00s)`, `--- FAIL: TestAdd (<dur>)`},
		{`[killed: wall-clock timeout after 1m2.5s]`, `[killed: wall-clock timeout after <dur>]`},
		{"raised `weird value` here", `raised <str> here`},
		{`x = -460   and   y = 1.5e3`, `x = <n> and y = <n>`},
		{`ModuleNotFoundError: No module named 'pkg.sub'`, `ModuleNotFoundError: No module named <id>`},
		{`FAIL	example.com/calc	0.013s`, `FAIL <path> <dur>`},
		{`version v2 of int64`, `version v2 of int64`},
	}
	for _, tt := range tests {
		if got := normLine(tt.in); got != tt.want {
			t.Errorf("normLine(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if again := normLine(tt.want); again != tt.want {
			t.Errorf("normLine not idempotent on %q: %q", tt.want, again)
		}
	}
}

func TestNormalizePython(t *testing.T) {
	tests := []struct {
		name, out       string
		kind, shape     string
		textHas, textNo string
	}{
		{
			name: "plain traceback keeps the last exception",
			out: `Traceback (most recent call last):
  File "/tmp/a/app.py", line 3, in <module>
    int("x")
ValueError: invalid literal for int() with base 10: 'x'

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "/tmp/a/app.py", line 5, in <module>
    raise RuntimeError("bad input")
RuntimeError: bad input`,
			kind: "python:RuntimeError", shape: "RuntimeError: bad input", textHas: "RuntimeError: bad input",
		},
		{
			name: "pytest assertion without exception line",
			out: `F                                                                        [100%]
=================================== FAILURES ===================================
___________________________________ test_add ___________________________________

    def test_add():
>       assert add(2, 3) == 5
E       assert -1 == 5
E        +  where -1 = add(2, 3)

test_math.py:4: AssertionError
=========================== short test summary info ============================
FAILED test_math.py::test_add - assert -1 == 5
1 failed in 0.01s`,
			kind: "python:AssertionError", shape: "AssertionError: assert <n> == <n>", textHas: "FAILED <path>::<id> - assert <n> == <n>",
		},
		{
			name: "first of two failures decides",
			out: `E       KeyError: 'a'
x.py:1: KeyError
E       ZeroDivisionError: division by zero
y.py:2: ZeroDivisionError
FAILED t.py::test_a - KeyError: 'a'
FAILED t.py::test_b - ZeroDivisionError: division by zero`,
			kind: "python:KeyError", shape: "KeyError: <id>", textHas: "ZeroDivisionError: division by zero",
		},
		{
			name: "collection error names the exception",
			out: `_______________________ ERROR collecting test_report.py ________________________
ImportError while importing test module '/tmp/p/test_report.py'.
E   ModuleNotFoundError: No module named 'tabulatex'
=========================== short test summary info ============================
ERROR test_report.py
!!!!!!!!!!!!!!!!!!!! Interrupted: 1 error during collection !!!!!!!!!!!!!!!!!!!!`,
			kind: "python:ModuleNotFoundError", shape: "ModuleNotFoundError: No module named <id>", textHas: "ERROR <path>", textNo: "/tmp/",
		},
		{
			name: "collection error without an exception",
			out: `_______________________ ERROR collecting test_x.py ________________________
import file mismatch:
=========================== short test summary info ============================
ERROR test_x.py`,
			kind: "pytest:collection-error", shape: "import file mismatch:", textHas: "ERROR <path>",
		},
		{
			name: "syntax error with caret",
			out: `  File "/tmp/q/calc.py", line 2
    def f(:
          ^
SyntaxError: invalid syntax`,
			kind: "python:SyntaxError", shape: "SyntaxError: invalid syntax",
		},
		{
			name: "summary line only",
			out:  `FAILED test_a.py::test_x - IndexError: list index out of range`,
			kind: "python:IndexError", shape: "IndexError: list index out of range",
		},
		{
			name: "dotted exception type",
			out:  `json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)`,
			kind: "python:JSONDecodeError", shape: "json.decoder.JSONDecodeError: Expecting value: line <n> column <n> (char <n>)",
		},
		{
			name: "timeout marker wins over partial output",
			out:  "F.\nE   assert 1 == 2\n[killed: wall-clock timeout after 10.001s]",
			kind: KindTimeout, shape: "[killed: wall-clock timeout after <dur>]", textHas: "assert <n> == <n>",
		},
		{
			name: "oom marker",
			out:  "collecting ...\n[killed: memory limit 1 GiB]",
			kind: KindOOM, shape: "[killed: memory limit <n> GiB]",
		},
		{
			name: "oom marker of old records",
			out:  "collecting ...\n[killed: out of memory]",
			kind: KindOOM, shape: "[killed: out of memory]",
		},
		{
			name: "no recognizable error",
			out:  "collected 0 items\n\nno tests ran in 0.01s",
			kind: "python:unknown", shape: "no tests ran in <dur>",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkSig(t, normalize("python", tt.out), tt.kind, tt.shape, tt.textHas, tt.textNo)
		})
	}
}

func TestNormalizeGo(t *testing.T) {
	tests := []struct {
		name, out       string
		kind, shape     string
		textHas, textNo string
	}{
		{
			name: "undefined identifier",
			out:  "# example.com/a [example.com/a.test]\n./a.go:6:18: undefined: restockLevel\nFAIL\texample.com/a [build failed]",
			kind: "go:compile:undefined", shape: "undefined: <id>", textHas: "<path>:<n>:<n>: undefined: restockLevel",
		},
		{
			name: "old style unused variable",
			out:  "./main.go:4:2: x declared and not used",
			kind: "go:compile:unused-var", shape: "declared and not used: <id>",
		},
		{
			name: "unused import",
			out:  "./main.go:3:8: \"os\" imported and not used",
			kind: "go:compile:unused-import", shape: "<id> imported and not used",
		},
		{
			name: "mismatched types",
			out:  "./m.go:4:9: invalid operation: n + f (mismatched types int and float64)",
			kind: "go:compile:mismatched-types", shape: "invalid operation: <expr> (mismatched types <type> and <type>)",
		},
		{
			name: "cannot use keeps the context",
			out:  "./m.go:4:9: cannot use s (variable of type string) as int value in argument to f",
			kind: "go:compile:cannot-use", shape: "cannot use <expr> as <type> value in argument",
		},
		{
			name: "unknown compile message is normalized generically",
			out:  "./m.go:4:9: invalid argument: index 5 out of bounds [0:3]",
			kind: "go:compile:other", shape: "invalid argument: index <n> out of bounds [<n>:<n>]",
		},
		{
			name: "vet finding under a bracketed header",
			out:  "# example.com/a\n# [example.com/a]\n./a.go:5:47: fmt.Sprintf format %d has arg s of wrong type string",
			kind: "go:vet", shape: "<id> format <verb> has arg <expr> of wrong type <type>", textHas: "vet: <path>",
		},
		{
			name: "vet arg count",
			out:  "vet: ./a.go:6:41: fmt.Sprintf format %s reads arg #3, but call has 2 args",
			kind: "go:vet", shape: "<id> format <verb> reads arg #<n>, but call has <n> args",
		},
		{
			name: "test failure with subtests",
			out: `--- FAIL: TestCount (0.00s)
    --- FAIL: TestCount/empty (0.00s)
        words_test.go:18: Count("") = 1, want 0
FAIL
FAIL	example.com/words	0.014s`,
			kind: "go:test-fail", shape: "<id>(<str>) = <n>, want <n>", textHas: "--- FAIL: <id>",
		},
		{
			name: "test failure without a message",
			out:  "--- FAIL: TestX (0.00s)\nFAIL\nFAIL\texample.com/x\t0.01s",
			kind: "go:test-fail", shape: "--- FAIL: <id>",
		},
		{
			name: "nil map panic inside a test",
			out: `--- FAIL: TestPut (0.00s)
panic: assignment to entry in nil map [recovered, repanicked]

goroutine 19 [running]:
testing.tRunner.func1.2({0x55a920, 0x6cac60})
	/usr/local/go/src/testing/testing.go:1974 +0x232
example.com/tenants.(*Store).Put(...)
	/tmp/T1/032/tenants.go:12
FAIL	example.com/tenants	0.021s`,
			kind: "go:panic:nil-map", shape: "panic: assignment to entry in nil map", textNo: "goroutine",
		},
		{
			name: "index panic",
			out:  "panic: runtime error: index out of range [5] with length 5\n\ngoroutine 1 [running]:\nmain.main()",
			kind: "go:panic:index-out-of-range", shape: "panic: runtime error: index out of range [<n>] with length <n>",
		},
		{
			name: "nil pointer panic",
			out:  "panic: runtime error: invalid memory address or nil pointer dereference\n[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x47e4f5]",
			kind: "go:panic:nil-pointer", shape: "panic: runtime error: invalid memory address or nil pointer dereference",
		},
		{
			name: "custom panic",
			out:  "panic: unreachable state 7\n\ngoroutine 1 [running]:",
			kind: "go:panic", shape: "panic: unreachable state <n>",
		},
		{
			name: "deadlock",
			out:  "fatal error: all goroutines are asleep - deadlock!\n\ngoroutine 1 [chan receive]:",
			kind: "go:deadlock", shape: "fatal error: all goroutines are asleep - deadlock!",
		},
		{
			name: "go test timeout",
			out:  "panic: test timed out after 3s\n\trunning tests:\n\t\tTestSpin (3s)",
			kind: KindTimeout, shape: "panic: test timed out after <dur>",
		},
		{
			name: "missing module",
			out:  "a.go:3:8: no required module provides package github.com/x/y; to add it:\n\tgo get github.com/x/y",
			kind: "go:build:missing-package", shape: "no module provides package <path>",
		},
		{
			name: "toolchain error",
			out:  "go: cannot find main module, but found .git/config in /tmp/r\n\tto create a module there, run:\n\tgo mod init",
			kind: "go:build", shape: "go: cannot find main module, but found <path> in <path>",
		},
		{
			name: "executor timeout",
			out:  "\n[killed: wall-clock timeout after 20.02s]",
			kind: KindTimeout, shape: "[killed: wall-clock timeout after <dur>]",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkSig(t, normalize("go", tt.out), tt.kind, tt.shape, tt.textHas, tt.textNo)
		})
	}
}

func checkSig(t *testing.T, sig Signature, kind, shape, textHas, textNo string) {
	t.Helper()
	if sig.Kind != kind || sig.Shape != shape {
		t.Errorf("got %q | %q, want %q | %q", sig.Kind, sig.Shape, kind, shape)
	}
	if textHas != "" && !strings.Contains(sig.Text, textHas) {
		t.Errorf("text %q lacks %q", sig.Text, textHas)
	}
	if textNo != "" && strings.Contains(sig.Text, textNo) {
		t.Errorf("text %q contains %q", sig.Text, textNo)
	}
}

func TestNormalizeWithoutParserReadsGenerically(t *testing.T) {
	tests := []struct {
		lang, out, kind string
	}{
		{"rust", "error[E0425]: cannot find value `x` in this scope", "rust:error"},
		{"", "Traceback (most recent call last):\n  File \"a.py\", line 1, in <module>\nKeyError: 'k'", KindUnknown},
		{"", "", KindUnknown},
		{"go", "\n\n", KindUnknown},
	}
	for _, tt := range tests {
		if got := Normalize(lang.Language{Name: tt.lang}, tt.out).Kind; got != tt.kind {
			t.Errorf("Normalize(%q, %q).Kind = %q, want %q", tt.lang, tt.out, got, tt.kind)
		}
	}
}

func TestTextBounded(t *testing.T) {
	var b strings.Builder
	for i := range 500 {
		b.WriteString("./f.go:" + strings.Repeat("1", i%7+1) + ":2: undefined: name" + strings.Repeat("x", i) + "\n")
	}
	sig := normalize("go", b.String())
	if len(sig.Text) > MaxText || strings.Count(sig.Text, "\n") >= maxKeys {
		t.Errorf("text not bounded: %d bytes, %d lines", len(sig.Text), strings.Count(sig.Text, "\n")+1)
	}
	if sig.Kind != "go:compile:undefined" {
		t.Errorf("kind = %q", sig.Kind)
	}
}

func TestSimilarity(t *testing.T) {
	keyErr := normalize("python", "E   KeyError: 'a'\nx.py:1: KeyError")
	keyErr2 := normalize("python", "E   KeyError: 'colour'\nsettings.py:40: KeyError")
	idxErr := normalize("python", "E   IndexError: list index out of range\nx.py:1: IndexError")
	undef := normalize("go", "./a.go:1:2: undefined: foo")
	unused := normalize("go", "./a.go:1:2: declared and not used: foo")

	if got := Similarity(keyErr, keyErr); got != 1 {
		t.Errorf("self similarity = %v, want 1", got)
	}
	if Similarity(keyErr, keyErr2) != Similarity(keyErr2, keyErr) {
		t.Error("similarity not symmetric")
	}
	ordered := []struct {
		name            string
		closer, farther float64
	}{
		{"same kind beats other python kind", Similarity(keyErr, keyErr2), Similarity(keyErr, idxErr)},
		{"other python kind beats go", Similarity(keyErr, idxErr), Similarity(keyErr, undef)},
		{"go compile family beats python", Similarity(undef, unused), Similarity(undef, keyErr)},
	}
	for _, o := range ordered {
		if !(o.closer > o.farther) {
			t.Errorf("%s: %v <= %v", o.name, o.closer, o.farther)
		}
	}
	for _, pair := range [][2]Signature{{keyErr, undef}, {Signature{}, keyErr}, {Signature{}, Signature{}}} {
		if s := Similarity(pair[0], pair[1]); s < 0 || s > 1 {
			t.Errorf("similarity %v out of [0,1]", s)
		}
	}
}

func FuzzNormalize(f *testing.F) {
	for _, s := range loadDataset(f) {
		f.Add(s.Lang, s.Output)
	}
	f.Add("python", "E   'unterminated\n'\x00\xff\x1b[31mred\x1b[0m")
	f.Add("go", "./a.go:1:2: "+strings.Repeat("0x1 ", 100))
	f.Add("", "[killed: out of memory]")
	f.Fuzz(func(t *testing.T, lang, out string) {
		a := normalize(lang, out)
		if b := normalize(lang, out); a != b {
			t.Fatalf("not deterministic: %+v vs %+v", a, b)
		}
		if len(a.Kind) > MaxKind || len(a.Shape) > MaxShape || len(a.Text) > MaxText {
			t.Fatalf("unbounded: kind %d, shape %d, text %d bytes", len(a.Kind), len(a.Shape), len(a.Text))
		}
		for _, s := range []string{a.Kind, a.Shape, a.Text} {
			if !utf8.ValidString(s) || strings.ContainsRune(s, 0) {
				t.Fatalf("invalid text in %+v", a)
			}
		}
		// The text is already normalized: normalizing it again reaches a
		// fixed point after one step.
		b := normalize(lang, a.Text)
		if c := normalize(lang, b.Text); c != b {
			t.Fatalf("not idempotent on text:\n%+v\n%+v", b, c)
		}
		if s := Similarity(a, b); s < 0 || s > 1 {
			t.Fatalf("similarity %v out of range", s)
		}
	})
}

// normalize reads output as the named language would: its parser is
// handed in by the language's plug-in in the product.
func normalize(name, output string) Signature {
	l := lang.Language{Name: name}
	switch name {
	case "python":
		l.Failure.Parse = ParsePython
	case "go":
		l.Failure.Parse = ParseGo
	}
	return Normalize(l, output)
}
