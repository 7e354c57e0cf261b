// Package python is autocoder's knowledge of Python: pytest, the sandbox
// image with Python 3.11 (Debian's, and the official image of the same
// minor version), and the failure parser lessons are keyed by.
package python

import (
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/autocoder/autocoder/internal/lang"
	"github.com/autocoder/autocoder/internal/signature"
)

// testCmd is pytest, quiet.
var testCmd = []string{"python3", "-m", "pytest", "-q"}

// Language returns Python.
func Language() lang.Language {
	return lang.Language{
		Name:    "python",
		Title:   "Python",
		Aliases: []string{"py", "python3"},
		Detect: lang.Detect{
			Markers:  []string{"pyproject.toml", "setup.py", "setup.cfg", "requirements.txt", "Pipfile", "tox.ini"},
			Commands: []string{"pytest", "py.test", "python", "python3", "tox"},
			Task:     `\bpython\b|\bpytest\b|\bdjango\b|\bflask\b|\bfastapi\b`,
		},
		Tests: lang.Tests{
			Command: testCmd,
			// pytest takes paths and node ids; with none named, the
			// checker has already parsed every file and nothing more runs.
			Named: func(tests []string) ([]string, error) {
				if len(tests) == 0 {
					return nil, nil
				}
				return append(slices.Clone(testCmd), tests...), nil
			},
			IsTestFile: isTestFile,
		},
		Guide: `Language: Python 3.11. Prefer the standard library. A third-party package the code needs goes in requirements.txt (name==version), or in pyproject.toml's [project] dependencies when the project has one; it is installed before the tests run, and nothing installs it at run time.
Tests are pytest files named test_*.py next to the code; import the code under test by module name.`,
		Extensions: []string{".py"},
		Failure: lang.Failure{
			Parse:  signature.ParsePython,
			Digest: digest,
			Failing: []*regexp.Regexp{
				regexp.MustCompile(`(?m)^FAILED (\S+)`),      // the summary
				regexp.MustCompile(`(?m)^ERROR (\S+\.py)\b`), // a collection error
			},
		},
		Policy: lang.Policy{Checker: lang.CheckerPython},
		// pip's default index (https://pypi.org/simple) and the host
		// PyPI serves that index's files from.
		Deps: lang.Deps{
			Registries:  []string{"pypi.org", "files.pythonhosted.org"},
			Manifests:   []string{"requirements.txt", "pyproject.toml"},
			Declares:    declaresDependencies,
			KeyData:     installKeyData,
			Install:     []string{"sh", "-c", pipInstall},
			InstallText: "pip install --target " + lang.DepsDir + " with requirements.txt and pyproject.toml's dependencies and test groups",
			Env:         map[string]string{"PYTHONPATH": lang.DepsDir},
			IndexVar:    "PIP_INDEX_URL",
			IndexEnv:    trustPlainHTTP,
			// PyPI's JSON API; an index the user names speaks the simple
			// repository API.
			Versions: lang.Versions{API: lang.VersionsPyPI, URL: "https://pypi.org", IndexAPI: lang.VersionsSimple},
			Add:      add,
		},
		Sandbox: lang.Sandbox{
			Image: "autocoder/sandbox-python:2",
			Env: map[string]string{
				"PYTHONDONTWRITEBYTECODE": "1",
				"PYTHONUNBUFFERED":        "1",
			},
			Recipe: lang.Recipe{
				Base:      "python:3.11-slim-bookworm",
				BaseSetup: "pip install --no-cache-dir pytest && rm -rf /root/.cache",
				Packages:  []string{"python3", "python3-pytest", "python3-pip"},
			},
			ToolchainDirs: lang.DebianToolchainDirs,
			Prewarm:       `printf 'def test_w():\n    pass\n' > test_w.py && python3 -m pytest -q -p no:cacheprovider`,
			HostCheck:     []string{"/usr/bin/python3", "-c", "import pytest"},
			HostToolchain: "/usr/bin/python3",
			Install:       "apt-get install python3-pytest python3-pip",
		},
	}
}

// declaresRequirements reports a requirements.txt that names anything:
// a line that is neither blank nor a comment.
func declaresRequirements(manifests map[string][]byte) bool {
	for _, line := range strings.Split(string(manifests["requirements.txt"]), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			return true
		}
	}
	return false
}

// isTestFile is pytest's default discovery: test_*.py and *_test.py, and
// Django's tests.py; files under tests/ belong to the tests too.
func isTestFile(p string) bool {
	base := path.Base(p)
	if strings.HasSuffix(base, ".py") && (strings.HasPrefix(base, "test_") || strings.HasSuffix(base, "_test.py") || base == "tests.py") {
		return true
	}
	return lang.UnderTestDir(p)
}

// trustPlainHTTP: pip ignores an index served over plain HTTP unless its
// host is trusted, except on the loopback. An index the user configured
// is one they chose, so its host is trusted; the proxy still limits the
// install to it.
func trustPlainHTTP(index string) map[string]string {
	u, err := url.Parse(index)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return nil
	}
	return map[string]string{"PIP_TRUSTED_HOST": u.Host}
}
