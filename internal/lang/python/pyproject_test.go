package python

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/testenv"
)

var pyprojects = []struct {
	name, text string
	want       []string
}{
	{"project, test extras and groups", `
[project]
name = "My_Pkg"
dependencies = ["attrs>=23", "  ", "requests >= 2.0 ; python_version >= '3.8'"]

[project.optional-dependencies]
test = ["pytest-mock==3.14", "my-pkg[extra]"]
docs = ["sphinx"]

[dependency-groups]
lint = ["ruff"]
base = ["hypothesis>=6", {include-group = "dev"}]
dev = [{include-group = "base"}, "coverage[toml]"]
`, []string{"attrs>=23", "requests >= 2.0 ; python_version >= '3.8'", "pytest-mock==3.14", "hypothesis>=6", "coverage[toml]"}},
	{"entries of other types are skipped", `
[project]
name = 3
dependencies = ["six", 7, {a = 1}]
[project.optional-dependencies]
docs = [1]
test = ["nose2", ["x"]]
[dependency-groups]
dev = 5
`, []string{"six", "nose2"}},
	{"no dependencies", "[project]\nname = \"x\"\nversion = \"1\"\n", nil},
	{"poetry's own table is not read", "[tool.poetry.dependencies]\nrequests = \"^2\"\n", nil},
	{"not TOML", "[project\ndependencies = [", nil},
}

// pyprojectRequirements takes [project] dependencies and the test groups
// of optional dependencies and dependency groups (included groups once),
// never the project itself.
func TestPyprojectRequirements(t *testing.T) {
	for _, c := range pyprojects {
		if got := pyprojectRequirements([]byte(c.text)); !slices.Equal(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
		if got := declaresDependencies(map[string][]byte{"pyproject.toml": []byte(c.text)}); got != (len(c.want) > 0) {
			t.Errorf("%s: declares %v", c.name, got)
		}
	}
}

// TestPyprojectRules: the script the install runs in the sandbox reads
// pyproject.toml as pyprojectRequirements does (here with the host's
// Python, 3.11 like the image's).
func TestPyprojectRules(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		testenv.RequireService(t, "python3", err)
	}
	for _, c := range pyprojects {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "pyproject.toml"), []byte(c.text), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(py, "-c", pyprojectScript)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v: %s", c.name, err, out)
		}
		var got []string
		if text := strings.TrimSpace(string(out)); text != "" {
			got = strings.Split(text, "\n")
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: the script printed %q, want %q", c.name, got, c.want)
		}
	}
}

// TestInstallKeyData: a pyproject.toml edit the install does not read
// keeps the install's key; a new requirement, or a file this reader
// cannot read, changes it.
func TestInstallKeyData(t *testing.T) {
	base := "[project]\nname = \"demo\"\nversion = \"1.0\"\ndependencies = [\"requests>=2\"]\n[tool.pytest.ini_options]\naddopts = \"-q\"\n"
	key := func(text string) string {
		return string(installKeyData("pyproject.toml", map[string][]byte{"pyproject.toml": []byte(text)}))
	}
	same := strings.NewReplacer(`version = "1.0"`, `version = "1.1"`, `"-q"`, `"-x"`).Replace(base)
	if key(same) != key(base) {
		t.Errorf("a new version and pytest option changed the key: %q vs %q", key(same), key(base))
	}
	for name, text := range map[string]string{
		"another requirement": strings.Replace(base, `["requests>=2"]`, `["requests>=2", "rich"]`, 1),
		"a test group":        base + "[project.optional-dependencies]\ntest = [\"pytest-cov\"]\n",
		"unreadable TOML":     base + "dependencies = [\n",
	} {
		if key(text) == key(base) {
			t.Errorf("%s kept the key", name)
		}
	}
	if got := string(installKeyData("requirements.txt", map[string][]byte{"requirements.txt": []byte("a==1\n# note\n")})); got != "a==1\n# note\n" {
		t.Errorf("requirements.txt keyed by %q, want all of it", got)
	}
	// A requirements.txt that installs the project reads all of
	// pyproject.toml (its build, its extras).
	for _, req := range []string{".[docs]", "-e .", "--editable=./sub", "./pkg", "demo @ file:///src/demo", "../other"} {
		m := map[string][]byte{"pyproject.toml": []byte(same), "requirements.txt": []byte("rich\n" + req + "\n")}
		if got := string(installKeyData("pyproject.toml", m)); got != same {
			t.Errorf("with %q in requirements.txt: pyproject.toml keyed by %q, want all of it", req, got)
		}
	}
	if m := map[string][]byte{"pyproject.toml": []byte(same), "requirements.txt": []byte("rich>=13\n# file: notes\n")}; string(installKeyData("pyproject.toml", m)) != key(same) {
		t.Error("a requirements.txt of packages alone changed pyproject.toml's key")
	}
}
