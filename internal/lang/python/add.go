package python

import (
	"regexp"
	"strings"

	"github.com/autocoder/autocoder/internal/lang"
)

// Adding a requirement (the install tool): pip has no command that adds
// one to a manifest, so pip download checks that the index serves it
// (a wrong name or version fails with pip's own message), then addScript
// writes it where the project keeps its requirements: requirements.txt,
// which pip reads as it is and a diff shows as one line, or, in a project
// that has none, the [project] dependencies of its pyproject.toml (unless
// they are dynamic), so a pyproject project does not grow a second
// manifest.

// addExample is a requirement as the install tool takes it.
const addExample = "requests==2.32.3"

// requirementSpec is a PEP 508 requirement without markers or a direct
// reference (a URL or path): a name, extras and version specifiers.
var requirementSpec = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])? *` +
	`(\[ *[A-Za-z0-9._-]+( *, *[A-Za-z0-9._-]+)* *\])? *` +
	`((===|==|~=|!=|<=|>=|<|>) *[A-Za-z0-9.*+!_-]+( *, *(===|==|~=|!=|<=|>=|<|>) *[A-Za-z0-9.*+!_-]+)*)? *$`)

var add = lang.Add{
	Command: pipAdd,
	Files:   []string{"requirements.txt", "pyproject.toml"},
	Example: addExample,
	Guide: `To add a package, call install with its requirement ("` + addExample + `"): pip checks that the index has it, and it goes in requirements.txt ` +
		`(or pyproject.toml's [project] dependencies when the project has that and no requirements.txt); install is the only way to reach the index.`,
}

// pipAdd checks the requirements with pip, then adds them (addScript).
// Python keeps no separate test requirements in requirements.txt: dev
// changes nothing.
func pipAdd(pkgs []string, _ bool) ([]string, error) {
	if err := lang.CheckPackages(pkgs, requirementSpec, addExample); err != nil {
		return nil, err
	}
	specs := make([]string, len(pkgs))
	for i, p := range pkgs {
		specs[i] = strings.ReplaceAll(p, " ", "") // as the manifest keeps it
	}
	return append([]string{"sh", "-c", pipAddScript, "sh"}, specs...), nil
}

// pipAddScript downloads the requirements alone, without their own
// dependencies (the check's install resolves those), into the scratch
// DepsDir, then writes them into the manifest.
const pipAddScript = `python3 -m pip download --no-deps --no-cache-dir --disable-pip-version-check --no-input --dest ` + lang.DepsDir + `/download -- "$@" || exit 1
exec python3 - "$@" <<'PY'
` + addScript + `PY
`

// addScript adds its arguments, requirements, to requirements.txt or
// pyproject.toml (see above): a requirement of the same name is replaced
// where it stands, keeping its comment; a new one goes last. pyproject.toml
// is edited as text, so its layout and comments stay, and read again
// after: an edit TOML does not read as meant is not written.
const addScript = `import os, re, sys
specs = sys.argv[1:]
def norm(n):
    return re.sub(r"[-_.]+", "-", n.lower())
def name(req):
    m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", req)
    return norm(m.group(1)) if m else ""
def load(text):
    try:
        import tomllib
    except ImportError:
        return None
    try:
        return tomllib.loads(text)
    except ValueError:
        return None
def project_of(doc):
    p = doc.get("project") if isinstance(doc, dict) else None
    return p if isinstance(p, dict) else None

def add_requirements(path):
    lines = open(path).read().splitlines(True) if os.path.exists(path) else []
    for spec in specs:
        for i, line in enumerate(lines):
            code, sep, comment = line.rstrip("\n").partition("#")
            code = code.strip()
            if code and not code.startswith("-") and name(code) == name(spec):
                lines[i] = spec + ("  #" + comment if sep else "") + "\n"
                print("%s: %s replaced by %s" % (path, code, spec))
                break
        else:
            if lines and not lines[-1].endswith("\n"):
                lines[-1] += "\n"
            lines.append(spec + "\n")
            print("%s: added %s" % (path, spec))
    open(path, "w").write("".join(lines))

def array_at(text, i):
    """The string literals of the TOML array opening at text[i] ("["), as
    (start, end) spans, and the index of its closing "]"; None when it
    holds what this reading does not follow (multi-line strings)."""
    lits, depth = [], 0
    while i < len(text):
        c = text[i]
        if c == "#":
            i = text.find("\n", i)
            if i < 0:
                return None
            continue
        if c in "\"'":
            if text.startswith(c * 3, i):
                return None
            j = i + 1
            while j < len(text) and text[j] != c and text[j] != "\n":
                j += 2 if c == '"' and text[j] == "\\" else 1
            if j >= len(text) or text[j] != c:
                return None
            lits.append((i, j + 1))
            i = j + 1
            continue
        if c == "[":
            depth += 1
        elif c == "]":
            depth -= 1
            if depth == 0:
                return lits, i
        i += 1
    return None

def add_one(text, spec):
    head = re.search(r"(?m)^[ \t]*\[project\][ \t]*(#.*)?$", text)
    if not head:
        return None
    nxt = re.compile(r"(?m)^[ \t]*\[").search(text, head.end())
    end = nxt.start() if nxt else len(text)
    key = re.compile(r"(?m)^[ \t]*dependencies[ \t]*=[ \t]*(?=\[)").search(text, head.end(), end)
    lit = '"' + spec + '"'
    if not key:
        at = head.end() + 1 if head.end() < len(text) else len(text)
        line = "dependencies = [" + lit + "]\n"
        return text[:at] + ("" if at == 0 or text[at - 1] == "\n" else "\n") + line + text[at:]
    found = array_at(text, key.end())
    if found is None:
        return None
    lits, close = found
    for s, e in lits:
        if name(text[s + 1:e - 1]) == name(spec):
            return text[:s] + lit + text[e:]
    if not lits:
        return text[:key.end() + 1] + lit + text[key.end() + 1:]
    s, e = lits[-1]
    rest = re.match(r"[ \t]*,", text[e:close])
    multiline = "\n" in text[key.end():close]
    indent = re.match(r"[ \t]*", text[text.rfind("\n", 0, s) + 1:]).group(0)
    sep = "\n" + indent if multiline else " "
    if rest:
        at = e + rest.end()
        return text[:at] + sep + lit + "," + text[at:]
    return text[:e] + "," + sep + lit + text[e:]

def add_pyproject(path):
    text = open(path).read()
    for spec in specs:
        new = add_one(text, spec)
        deps = (project_of(load(new)) or {}).get("dependencies") if new is not None else None
        if not isinstance(deps, list) or spec not in deps:
            print("%s: %s could not be added to [project] dependencies; add it there yourself" % (path, spec), file=sys.stderr)
            sys.exit(1)
        text = new
        print("%s: %s in [project] dependencies" % (path, spec))
    open(path, "w").write(text)

project = None
if not os.path.exists("requirements.txt") and os.path.exists("pyproject.toml"):
    project = project_of(load(open("pyproject.toml").read()))
dynamic = project.get("dynamic") if project else None
if project is not None and not (isinstance(dynamic, list) and "dependencies" in dynamic):
    add_pyproject("pyproject.toml")
else:
    add_requirements("requirements.txt")
`
