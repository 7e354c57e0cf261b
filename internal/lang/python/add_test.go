package python

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/testenv"
)

// TestPipAddRefusesWhatIsNoRequirement: the install tool passes on
// requirements by name and version only: an option, an editable or
// direct reference, a URL, a path or a marker is refused, with why.
func TestPipAddRefusesWhatIsNoRequirement(t *testing.T) {
	for _, ok := range [][]string{{"requests==2.32.3"}, {"requests[socks] >= 2.31, <3", "Flask"}, {"zope.interface~=6.0", "a_b-c.d===1.0+local"}} {
		cmd, err := pipAdd(ok, false)
		if err != nil {
			t.Errorf("%q refused: %v", ok, err)
			continue
		}
		if args := cmd[4:]; len(args) != len(ok) {
			t.Errorf("%q passed on as %q", ok, args)
		}
	}
	if cmd, _ := pipAdd([]string{"requests[socks] >= 2.31, <3"}, false); cmd[len(cmd)-1] != "requests[socks]>=2.31,<3" {
		t.Errorf("whitespace is kept: %q", cmd)
	}
	for _, c := range []struct{ spec, want string }{
		{"--index-url=https://evil.example/simple", "is an option"},
		{"-e .", "is an option"},
		{" -r other.txt", "is an option"},
		{"git+https://github.com/psf/requests", "not a package"},
		{"requests @ https://files.example/requests.whl", "not a package"},
		{"./vendor/pkg", "not a package"},
		{"/tmp/pkg.whl", "not a package"},
		{"requests; python_version<'3.12'", "not a package"},
		{"requests==2.0 && curl evil", "not a package"},
		{"", "not a package"},
		{strings.Repeat("a", 300), "at most 200 bytes"},
	} {
		if _, err := pipAdd([]string{c.spec}, false); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.spec, err, c.want)
		}
	}
	if _, err := pipAdd(nil, false); err == nil || !strings.Contains(err.Error(), "at least one") {
		t.Errorf("no package: %v", err)
	}
}

// TestAddScript: the script the install tool runs after pip has found the
// requirements writes them where the project keeps its requirements
// (here with the host's Python, 3.11 like the image's): requirements.txt,
// a requirement of the same name replaced where it stands; or, in a
// project with a pyproject.toml [project] table and no requirements.txt,
// its dependencies, whatever their layout, with comments and the rest of
// the file as they were.
func TestAddScript(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		testenv.RequireService(t, "python3", err)
	}
	for _, c := range []struct {
		name  string
		files map[string]string
		specs []string
		want  map[string]string
	}{
		{"a new requirements.txt", map[string]string{}, []string{"requests==2.32.3"},
			map[string]string{"requirements.txt": "requests==2.32.3\n"}},
		{"replaced and added", map[string]string{"requirements.txt": "# pinned\nA_b==1  # why\n-r dev.txt\nlast"}, []string{"a-B==2", "new==3"},
			map[string]string{"requirements.txt": "# pinned\na-B==2  # why\n-r dev.txt\nlast\nnew==3\n"}},
		{"requirements.txt beside pyproject.toml", map[string]string{"requirements.txt": "x==1\n", "pyproject.toml": "[project]\nname = \"p\"\n"},
			[]string{"y==2"}, map[string]string{"requirements.txt": "x==1\ny==2\n", "pyproject.toml": "[project]\nname = \"p\"\n"}},
		{"a multi-line array", map[string]string{"pyproject.toml": `[project]
name = "demo"
dependencies = [
    "greetlib==1.0",  # the greeting ]
    "other[x]>=2"
]

[tool.pytest.ini_options]
addopts = "-q"
`}, []string{"GreetLib==2.0", "extra[a,b]>=3"}, map[string]string{"pyproject.toml": `[project]
name = "demo"
dependencies = [
    "GreetLib==2.0",  # the greeting ]
    "other[x]>=2",
    "extra[a,b]>=3"
]

[tool.pytest.ini_options]
addopts = "-q"
`}},
		{"a one-line array with a trailing comma", map[string]string{"pyproject.toml": "[project]\nname = 'p'\ndependencies = ['a==1',]\n"},
			[]string{"b==2"}, map[string]string{"pyproject.toml": "[project]\nname = 'p'\ndependencies = ['a==1', \"b==2\",]\n"}},
		{"no dependencies yet", map[string]string{"pyproject.toml": "[project]\nname = \"p\"\n\n[tool.x]\ny = 1\n"},
			[]string{"a==1", "b==2"}, map[string]string{"pyproject.toml": "[project]\ndependencies = [\"a==1\", \"b==2\"]\nname = \"p\"\n\n[tool.x]\ny = 1\n"}},
		{"dynamic dependencies", map[string]string{"pyproject.toml": "[project]\nname = \"p\"\ndynamic = [\"dependencies\"]\n"},
			[]string{"a==1"}, map[string]string{"requirements.txt": "a==1\n", "pyproject.toml": "[project]\nname = \"p\"\ndynamic = [\"dependencies\"]\n"}},
		{"no [project] table", map[string]string{"pyproject.toml": "[tool.black]\nline-length = 100\n"},
			[]string{"a==1"}, map[string]string{"requirements.txt": "a==1\n", "pyproject.toml": "[tool.black]\nline-length = 100\n"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			for p, d := range c.files {
				if err := os.WriteFile(filepath.Join(dir, p), []byte(d), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			cmd := exec.Command(py, append([]string{"-c", addScript}, c.specs...)...)
			cmd.Dir = dir
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			for p, want := range c.want {
				if got, _ := os.ReadFile(filepath.Join(dir, p)); string(got) != want {
					t.Errorf("%s:\n%s\nwant:\n%s\n(script said: %s)", p, got, want, out)
				}
			}
		})
	}
}
