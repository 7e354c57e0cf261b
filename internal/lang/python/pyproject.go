package python

import (
	"regexp"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"github.com/autocoder/autocoder/internal/lang"
)

// What a project's pyproject.toml asks to have installed before its tests:
// [project] dependencies, and from [project.optional-dependencies] and
// PEP 735's [dependency-groups] the groups its tests need (testGroups).
// The project itself is not installed: its tests run on its files as the
// model leaves them, and building it would need its build backend. A
// requirement naming the project (its own extras) is left out for the same
// reason. pyprojectScript does the same in the sandbox: TestPyprojectRules
// holds the two to one answer.

// testGroups are the groups whose requirements the tests are taken to need.
var testGroups = []string{"test", "tests", "testing", "dev"}

// pyprojectRequirements are the requirements pyproject.toml declares for
// the project and its tests; a file TOML cannot read declares none (pip
// says nothing of it, so the tests' import errors will).
func pyprojectRequirements(data []byte) []string {
	// Loosely typed: an entry of another type is skipped, not the file.
	var doc map[string]any
	if err := toml.Unmarshal(data, &doc); err != nil {
		return nil
	}
	project := tableOf(doc["project"])
	reqs := stringsOf(project["dependencies"])
	optional, groups := tableOf(project["optional-dependencies"]), tableOf(doc["dependency-groups"])
	for _, g := range testGroups {
		reqs = append(reqs, stringsOf(optional[g])...)
		reqs = append(reqs, groupRequirements(groups, g, map[string]bool{})...)
	}
	name, _ := project["name"].(string)
	self := normalizeName(name)
	var out []string
	for _, r := range reqs {
		if r = strings.TrimSpace(r); r != "" && (self == "" || normalizeName(requirementName(r)) != self) {
			out = append(out, r)
		}
	}
	return out
}

// tableOf is v as a TOML table, or an empty one.
func tableOf(v any) map[string]any {
	t, _ := v.(map[string]any)
	return t
}

// stringsOf are the strings among items, an array.
func stringsOf(items any) []string {
	list, _ := items.([]any)
	var out []string
	for _, it := range list {
		if s, ok := it.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// groupRequirements are a dependency group's requirements, with the
// groups it includes ({include-group = "name"}) once each.
func groupRequirements(groups map[string]any, name string, seen map[string]bool) []string {
	if seen[name] {
		return nil
	}
	seen[name] = true
	list, _ := groups[name].([]any)
	var out []string
	for _, item := range list {
		switch v := item.(type) {
		case string:
			out = append(out, v)
		case map[string]any:
			if inc, ok := v["include-group"].(string); ok {
				out = append(out, groupRequirements(groups, inc, seen)...)
			}
		}
	}
	return out
}

var requirementNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*`)

// requirementName is the distribution a requirement names ("a[b]>=1" → "a").
func requirementName(req string) string { return requirementNameRE.FindString(req) }

var separatorsRE = regexp.MustCompile(`[-_.]+`)

// normalizeName is a distribution's name as PEP 503 compares them.
func normalizeName(name string) string {
	return separatorsRE.ReplaceAllString(strings.ToLower(name), "-")
}

// pyprojectScript prints, one a line, the requirements of the
// pyproject.toml in the working directory by pyprojectRequirements' rules.
var pyprojectScript = `import re, sys
try:
    import tomllib
except ImportError:  # before Python 3.11
    try:
        import tomli as tomllib
    except ImportError:
        print("pyproject.toml's dependencies are not installed: this Python (%d.%d) cannot read TOML (3.11 or later can, "
              "or with tomli installed); name them in requirements.txt instead" % sys.version_info[:2], file=sys.stderr)
        sys.exit(0)
try:
    doc = tomllib.load(open("pyproject.toml", "rb"))
except (OSError, ValueError):
    sys.exit(0)
def strs(items):
    return [i for i in items if isinstance(i, str)] if isinstance(items, list) else []
def norm(n):
    return re.sub(r"[-_.]+", "-", n.lower())
def group(groups, name, seen):
    if name in seen:
        return []
    seen.add(name)
    out = []
    items = groups.get(name)
    for item in items if isinstance(items, list) else []:
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, dict) and isinstance(item.get("include-group"), str):
            out += group(groups, item["include-group"], seen)
    return out
def table(v):
    return v if isinstance(v, dict) else {}
project = table(doc.get("project"))
reqs = strs(project.get("dependencies"))
for g in ("` + strings.Join(testGroups, `", "`) + `",):
    reqs += strs(table(project.get("optional-dependencies")).get(g))
    reqs += group(table(doc.get("dependency-groups")), g, set())
name = project.get("name")
self = norm(name if isinstance(name, str) else "")
for r in reqs:
    r = r.strip()
    m = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", r)
    if r and (not self or norm(m.group(0) if m else "") != self):
        print(r)
`

// installKeyData is what of a manifest pipInstall reads (lang.Deps.KeyData):
// of pyproject.toml, the requirements, so that a new version number or a
// tool's setting installs nothing again. All of it where pip reads more:
// requirements.txt installs the project itself (".", "-e .", a path), whose
// build and extras pyproject.toml declares, or this TOML reader cannot read
// it, where the sandbox's reader may.
func installKeyData(path string, manifests map[string][]byte) []byte {
	data := manifests[path]
	if path != "pyproject.toml" || installsLocalPath(manifests["requirements.txt"]) {
		return data
	}
	var doc map[string]any
	if toml.Unmarshal(data, &doc) != nil {
		return data
	}
	return []byte(strings.Join(pyprojectRequirements(data), "\n"))
}

// localRequirementRE is a requirements line that names a directory or
// file rather than a package of the index: ".", "./sub", "-e .",
// "file:...", "../x", "/abs", "name @ file:...".
var localRequirementRE = regexp.MustCompile(`^\s*(?:-e\s+|--editable[=\s]+)?(?:\.|/|file:)|@\s*file:`)

// installsLocalPath reports whether requirements.txt installs a local path.
func installsLocalPath(requirements []byte) bool {
	for _, line := range strings.Split(string(requirements), "\n") {
		if localRequirementRE.MatchString(line) {
			return true
		}
	}
	return false
}

// pipInstall installs what requirements.txt and pyproject.toml declare,
// in one pip run so that one resolver sees all of it.
var pipInstall = `set --
if [ -f requirements.txt ]; then set -- "$@" -r requirements.txt; fi
if [ -f pyproject.toml ]; then
  python3 - > /tmp/pyproject-requirements.txt <<'PY' || exit 1
` + pyprojectScript + `PY
  if [ -s /tmp/pyproject-requirements.txt ]; then set -- "$@" -r /tmp/pyproject-requirements.txt; fi
fi
[ $# -gt 0 ] || exit 0
exec python3 -m pip install --no-cache-dir --disable-pip-version-check --no-input --target ` + lang.DepsDir + ` "$@"
`

// declaresDependencies reports manifests that name a package to install.
func declaresDependencies(manifests map[string][]byte) bool {
	return declaresRequirements(manifests) || len(pyprojectRequirements(manifests["pyproject.toml"])) > 0
}
