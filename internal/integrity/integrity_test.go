package integrity

import (
	"slices"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/workspace"
)

func files(kv ...string) []workspace.File {
	var out []workspace.File
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, workspace.File{Path: kv[i], Data: []byte(kv[i+1])})
	}
	return out
}

func TestProtectedSet(t *testing.T) {
	input := files(
		"calc.py", "def add(a, b): ...\n",
		"test_calc.py", "def test_add(): ...\n",
		"pkg/util_test.py", "",
		"tests/data.json", "{}",
		"checks/check_api.py", "def check(): ...\n",
		"conftest.py", "",
		"pyproject.toml", "[tool.pytest.ini_options]\naddopts = '-q'\n",
		"setup.cfg", "[metadata]\nname = x\n",
		"go/calc.go", "package calc\n",
		"go/calc_test.go", "package calc\n",
		"go/testdata/golden.txt", "x",
		"web/app.test.ts", "",
		"web/app.ts", "",
		"legacy/verify.py", "",
		"docs/guide.md", "",
		"app/tests.py", "",
		"spec/openapi.yaml", "",
	)
	s := Protect(input, Options{TestCmd: "python3 -m pytest -q checks/check_api.py::test_x ./go/...", Protect: []string{"legacy/**", "*.md"}})
	want := []string{
		"app/tests.py", "checks/check_api.py", "conftest.py", "docs/guide.md", "go/calc_test.go", "go/testdata/golden.txt",
		"legacy/verify.py", "pkg/util_test.py", "pyproject.toml", "test_calc.py", "tests/data.json", "web/app.test.ts",
	}
	if got := s.Paths(); !slices.Equal(got, want) {
		t.Errorf("protected = %v\nwant        %v", got, want)
	}
}

func TestJudge(t *testing.T) {
	const test = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
	const goTest = "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 3) != 5 {\n\t\tt.Fatal(\"bad\")\n\t}\n}\n"
	input := files("calc.py", "def add(a, b):\n    return a - b\n", "test_calc.py", test, "calc_test.go", goTest, "setup.cfg", "[metadata]\n")
	// users is an attempt with new code and the user's tests as they were.
	users := func(kv ...string) []workspace.File {
		return files(append([]string{"calc.py", "x", "test_calc.py", test, "calc_test.go", goTest}, kv...)...)
	}
	cases := []struct {
		name    string
		attempt []workspace.File
		kind    string // "" = no finding
		detail  string
		dropped string // a file the judge must not run
	}{
		{name: "code fixed, own test added",
			attempt: files("calc.py", "def add(a, b):\n    return a + b\n", "test_calc.py", test, "calc_test.go", goTest, "test_more.py", "def test_more(): pass\n", "setup.cfg", "[metadata]\n")},
		{name: "body rewritten",
			attempt: files("calc.py", "x", "test_calc.py", "def test_add():\n    assert True\n", "calc_test.go", goTest),
			kind:    KindChanged},
		{name: "file deleted, dummy added",
			attempt: files("calc.py", "x", "test_dummy.py", "def test_ok(): pass\n", "calc_test.go", goTest),
			kind:    KindDeleted},
		{name: "conftest skips everything",
			attempt: users("conftest.py", "import pytest\n\ndef pytest_collection_modifyitems(items):\n    for i in items:\n        i.add_marker(pytest.mark.skip)\n"),
			kind:    KindConfig, detail: "added or changed conftest.py", dropped: "conftest.py"},
		{name: "pytest.ini deselects",
			attempt: users("pytest.ini", "[pytest]\naddopts = -k 'not add'\n"),
			kind:    KindConfig, detail: "pytest.ini", dropped: "pytest.ini"},
		{name: "setup.cfg gains a deselecting pytest section",
			attempt: users("setup.cfg", "[metadata]\n[tool:pytest]\naddopts = --deselect test_calc.py::test_add\n"),
			kind:    KindConfig, detail: "setup.cfg"},
		// Any new pytest configuration: hooks that decide outcomes are too
		// many and too varied to tell apart from harmless ones.
		{name: "conftest fixture",
			attempt: users("conftest.py", "import pytest\n\n@pytest.fixture\ndef two():\n    return 2\n"),
			kind:    KindConfig, detail: "test configuration is the user's", dropped: "conftest.py"},
		{name: "conftest fakes every call",
			attempt: users("sub/conftest.py", "def pytest_pyfunc_call(pyfuncitem):\n    return True\n"),
			kind:    KindConfig, detail: "sub/conftest.py", dropped: "sub/conftest.py"},
		{name: "pytest.ini loads a plugin",
			attempt: users("pytest.ini", "[pytest]\naddopts = -p fakeplugin\n"),
			kind:    KindConfig, detail: "pytest.ini", dropped: "pytest.ini"},
		{name: "pyproject gains a pythonpath",
			attempt: users("pyproject.toml", "[tool.pytest.ini_options]\npythonpath = ['shadow']\n"),
			kind:    KindConfig, detail: "pyproject.toml", dropped: "pyproject.toml"},
		{name: "__init__.py beside the user's tests",
			attempt: users("__init__.py", "import builtins\n"),
			kind:    KindConfig, detail: "__init__.py", dropped: "__init__.py"},
		{name: "package __init__.py away from the tests",
			attempt: users("calc/__init__.py", "")},
		{name: "a fake pytest module",
			attempt: users("pytest.py", "import sys\nsys.exit(0)\n"),
			kind:    KindConfig, detail: "stands in for a module", dropped: "pytest.py"},
		{name: "a fake _pytest package",
			attempt: users("_pytest/main.py", ""),
			kind:    KindConfig, detail: "_pytest/main.py", dropped: "_pytest/main.py"},
		{name: "a fake unittest",
			attempt: users("src/unittest.py", ""),
			kind:    KindConfig, detail: "src/unittest.py", dropped: "src/unittest.py"},
		{name: "pytest.toml",
			attempt: users("pytest.toml", "[pytest]\naddopts = ['-p', 'fake']\n"),
			kind:    KindConfig, detail: "pytest.toml", dropped: "pytest.toml"},
		{name: "a plugin declared by package metadata",
			attempt: users("fake-0.1.dist-info/entry_points.txt", "[pytest11]\nfake = fakeplugin\n", "fakeplugin.py", "def pytest_pyfunc_call(pyfuncitem):\n    return True\n"),
			kind:    KindConfig, detail: "entry points", dropped: "fake-0.1.dist-info/entry_points.txt"},
		{name: "compiled Python beside the user's helpers",
			attempt: users("tests/__pycache__/helpers.cpython-311.pyc", "\x00"),
			kind:    KindConfig, detail: "compiled Python", dropped: "tests/__pycache__/helpers.cpython-311.pyc"},
		{name: "a .pth file",
			attempt: users("x.pth", "import os\n"),
			kind:    KindConfig, detail: "x.pth", dropped: "x.pth"},
		{name: "a module whose name only starts like the runner's",
			attempt: users("pytest_helpers.py", "", "unittest_extra/a.py", "")},
		{name: "go test skipped",
			attempt: files("calc.py", "x", "test_calc.py", test, "calc_test.go", strings.Replace(goTest, "{\n\tif", "{\n\tt.Skip()\n\tif", 1)),
			kind:    KindSkipped},
		{name: "python test renamed",
			attempt: files("calc.py", "x", "test_calc.py", strings.Replace(test, "def test_add", "def _test_add", 1), "calc_test.go", goTest),
			kind:    KindRenamed, detail: "test_add is now _test_add"},
		{name: "python test removed",
			attempt: files("calc.py", "x", "test_calc.py", "from calc import add\n", "calc_test.go", goTest),
			kind:    KindRemoved, detail: "test_add gone"},
		{name: "go test renamed",
			attempt: files("calc.py", "x", "test_calc.py", test, "calc_test.go", strings.Replace(goTest, "TestAdd", "TestAddLater", 1)),
			kind:    KindRenamed, detail: "TestAdd is now TestAddLater"},
		{name: "TestMain added in a new file",
			attempt: users("main_test.go", "package calc\n\nfunc TestMain(m *testing.M) {}\n"),
			kind:    KindConfig, detail: "TestMain", dropped: "main_test.go"},
	}
	s := Protect(input, Options{})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			judged, findings := s.Judge(c.attempt)
			if c.kind == "" {
				if len(findings) != 0 {
					t.Fatalf("findings = %+v, want none", findings)
				}
			} else if len(findings) != 1 || findings[0].Kind != c.kind || !strings.Contains(findings[0].String(), c.detail) {
				t.Fatalf("findings = %+v, want one %s mentioning %q", findings, c.kind, c.detail)
			}
			got := map[string]string{}
			for _, f := range judged {
				got[f.Path] = string(f.Data)
			}
			if got["test_calc.py"] != test || got["calc_test.go"] != goTest {
				t.Errorf("the judge does not run the originals: %q, %q", got["test_calc.py"], got["calc_test.go"])
			}
			if _, ok := got[c.dropped]; c.dropped != "" && ok {
				t.Errorf("the judge runs %s", c.dropped)
			}
			if c.detail == "setup.cfg" && got["setup.cfg"] != "[metadata]\n" {
				t.Errorf("setup.cfg not restored: %q", got["setup.cfg"])
			}
			if _, ok := got["calc.py"]; !ok {
				t.Error("the attempt's code is not judged")
			}
		})
	}
}

func TestNewPytestConfigOverridingTheUsers(t *testing.T) {
	s := Protect(files("pyproject.toml", "[tool.pytest.ini_options]\ntestpaths = ['tests']\n", "tests/test_a.py", "def test_a(): pass\n"), Options{})
	_, findings := s.Judge(files("pyproject.toml", "[tool.pytest.ini_options]\ntestpaths = ['tests']\n", "tests/test_a.py", "def test_a(): pass\n", "pytest.ini", "[pytest]\n"))
	if len(findings) != 1 || findings[0].Kind != KindConfig {
		t.Errorf("findings = %+v, want the new pytest.ini", findings)
	}
}

// A runner the test command names reads its own file to decide what runs:
// make's test target is as much the user's as the tests.
func TestRunnerFilesAreTheUsers(t *testing.T) {
	input := files("Makefile", "test:\n\tpython3 -m pytest -q\n", "calc.py", "x", "tox.ini", "[tox]\n")
	if got := Protect(input, Options{TestCmd: "make test"}).Paths(); !slices.Equal(got, []string{"Makefile"}) {
		t.Errorf("make test protects %v, want [Makefile]", got)
	}
	if got := Protect(input, Options{TestCmd: "python3 -m pytest"}).Paths(); len(got) != 0 {
		t.Errorf("pytest protects %v", got)
	}
}

func TestValidGlob(t *testing.T) {
	for _, g := range []string{"tests/**", "*.py", "a/b/c.txt"} {
		if err := ValidGlob(g); err != nil {
			t.Errorf("ValidGlob(%q) = %v", g, err)
		}
	}
	if err := ValidGlob("[a-"); err == nil {
		t.Error("a bad glob is accepted")
	}
}

func TestNoTestsOfTheUsersNothingToJudge(t *testing.T) {
	s := Protect(files("calc.py", "x"), Options{})
	attempt := files("calc.py", "y", "conftest.py", "import pytest\n\ndef pytest_collection_modifyitems(items): pass\n")
	judged, findings := s.Judge(attempt)
	if len(findings) != 0 || len(judged) != 2 {
		t.Errorf("judged %d files with findings %+v; want the attempt as it is", len(judged), findings)
	}
}

func TestGoBuildTampering(t *testing.T) {
	const goMod = "module example.com/calc\n\ngo 1.21\n\nrequire example.com/dep v1.0.0\n"
	const goTest = "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {}\n"
	input := files("go.mod", goMod, "calc.go", "package calc\n", "sub/sub_test.go", "package sub\n", "calc_test.go", goTest)
	s := Protect(input, Options{})
	cases := []struct {
		name, path, data string
		detail           string // "" = no finding
	}{
		{"module renamed", "go.mod", strings.Replace(goMod, "example.com/calc", "example.com/other", 1), "module path"},
		{"replace added", "go.mod", goMod + "replace example.com/dep => ./fake\n", "replace"},
		{"replace block added", "go.mod", goMod + "replace(\n\texample.com/dep v1.0.0 => ./fake\n)\n", "replace"},
		{"require added", "go.mod", goMod + "require example.com/more v1.2.0\n", ""},
		{"go.work added", "go.work", "go 1.21\n\nuse ./sub\n", "go.work"},
		{"nested module splits the user's", "sub/go.mod", "module example.com/sub\n", "leaves the user's tests out"},
		{"nested module of new code", "tools/go.mod", "module example.com/tools\n", ""},
		{"vendored dependency", "vendor/example.com/dep/dep.go", "package dep\n", "replaces a dependency"},
		{"TestMain", "main_test.go", "package calc\n\nimport \"testing\"\n\nfunc TestMain (m *testing.M) {}\n", "TestMain"},
		{"init exits", "exit_test.go", "package calc\n\nimport o \"os\"\n\nfunc init() {\n\to.Exit(0)\n}\n", "os.Exit"},
		{"init rewrites the arguments", "args_test.go", "package calc\n\nimport \"os\"\n\nfunc init() { os.Args = append(os.Args, \"-test.run=none\") }\n", "os.Args"},
		{"package variable sets a flag", "flag_test.go", "package calc\n\nimport \"flag\"\n\nvar _ = flag.Set(\"test.run\", \"none\")\n", "flag.Set"},
		{"init calls a helper that exits", "helper_test.go", "package calc\n\nimport \"os\"\n\nfunc init() { done() }\n\nfunc done() { os.Exit(0) }\n", "os.Exit"},
		{"linkname into the testing package", "calc_hook.go", "package calc\n\nimport _ \"unsafe\"\n\n//go:linkname fail testing.(*common).Fail\nfunc fail()\n", "go:linkname"},
		{"a method called TestMain", "m_test.go", "package calc\n\ntype T struct{}\n\nfunc (T) TestMain() {}\n", ""},
		{"a test of its own that uses os", "own_test.go", "package calc\n\nimport (\n\t\"os\"\n\t\"testing\"\n)\n\nfunc TestOwn(t *testing.T) { _ = os.Getenv(\"X\") }\n", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			attempt := files("go.mod", goMod, "calc.go", "package calc\n", "sub/sub_test.go", "package sub\n", "calc_test.go", goTest)
			if c.path == "go.mod" {
				attempt[0].Data = []byte(c.data)
			} else {
				attempt = append(attempt, files(c.path, c.data)...)
			}
			judged, findings := s.Judge(attempt)
			if c.detail == "" {
				if len(findings) != 0 {
					t.Fatalf("findings = %+v, want none", findings)
				}
				return
			}
			if len(findings) != 1 || findings[0].Kind != KindConfig || !strings.Contains(findings[0].String(), c.detail) {
				t.Fatalf("findings = %+v, want one mentioning %q", findings, c.detail)
			}
			for _, f := range judged {
				if f.Path == c.path && (c.path != "go.mod" || string(f.Data) != goMod) {
					t.Errorf("the judge runs the attempt's %s", c.path)
				}
			}
		})
	}
}

// TestHasTests: tests by convention, by the command or by --protect make a
// workspace have tests of the user's; configuration alone does not.
func TestHasTests(t *testing.T) {
	for _, tt := range []struct {
		name   string
		input  []workspace.File
		o      Options
		suffix string
		want   bool
	}{
		{"tests dir", files("calc.py", "x", "tests/test_calc.py", "def test_add(): ..."), Options{}, ".py", true},
		{"go test file", files("calc.go", "x", "calc_test.go", "package calc"), Options{}, "_test.go", true},
		{"protected", files("calc.py", "x", "checks/verify.py", "x"), Options{Protect: []string{"checks/**"}}, ".py", true},
		{"named by the command", files("calc.py", "x", "verify.py", "x"), Options{TestCmd: "python3 verify.py"}, ".py", true},
		{"configuration only", files("calc.py", "x", "conftest.py", "", "pytest.ini", "[pytest]\n"), Options{}, ".py", false},
		{"data under tests/", files("calc.py", "x", "tests/data.json", "{}"), Options{}, ".py", false},
		{"another language's tests", files("calc.py", "x", "web/app.test.ts", ""), Options{}, ".py", false},
		{"no tests", files("calc.py", "x"), Options{}, ".py", false},
	} {
		if got := Protect(tt.input, tt.o).HasTests(func(p string) bool { return strings.HasSuffix(p, tt.suffix) }); got != tt.want {
			t.Errorf("%s: HasTests(%q) = %v, want %v", tt.name, tt.suffix, got, tt.want)
		}
	}
}
