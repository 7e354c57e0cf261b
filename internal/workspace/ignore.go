package workspace

import (
	"bufio"
	"bytes"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"
)

// ignoreRules are the ignore patterns of a project as git reads them: the
// repository's .git/info/exclude first, then each directory's .gitignore
// from the root down, the last matching pattern deciding (a deeper file
// overrides a shallower one, a later line an earlier one). Patterns follow
// gitignore(5): "!" negates, a trailing "/" matches directories only, a
// slash at the start or in the middle anchors the pattern to its file's
// directory (else it matches a name at any depth), "*", "?" and "[...]"
// do not match "/", and "**" spans directories in "**/", "/**/" and "/**".
// A directory that is ignored is not entered, so, as in git, a negation
// cannot bring back a file below it. The user's global excludes
// (core.excludesFile) are not read: what is uploaded is decided by the
// project alone, not by the machine it is on.
type ignoreRules struct {
	exclude []ignorePattern            // .git/info/exclude, relative to the root
	byDir   map[string][]ignorePattern // each directory's .gitignore; "" is the root
}

type ignorePattern struct {
	re      *regexp.Regexp
	negate  bool
	dirOnly bool
	base    bool // no slash: matched against the base name at any depth
}

func newIgnoreRules(r *os.Root) (*ignoreRules, error) {
	g := &ignoreRules{byDir: map[string][]ignorePattern{}}
	if info, err := r.Lstat(".git"); err == nil && info.IsDir() {
		data, err := readRegularFile(r, ".git/info/exclude")
		if err != nil {
			return nil, err
		}
		g.exclude = parseIgnore(data)
	}
	return g, nil
}

// readDir reads the .gitignore of dir ("" for the root), if it has one.
func (g *ignoreRules) readDir(r *os.Root, dir string) error {
	data, err := readRegularFile(r, path.Join(dir, ".gitignore"))
	if err != nil {
		return err
	}
	if pats := parseIgnore(data); len(pats) > 0 {
		g.byDir[dir] = pats
	}
	return nil
}

// readRegularFile reads p when it is a regular file. A missing one, one
// that cannot be reached (a directory on the way is a symlink out of the
// project), a symlink (git does not follow a symlinked .gitignore either)
// or anything else reads as empty.
func readRegularFile(r *os.Root, p string) ([]byte, error) {
	info, err := r.Lstat(p)
	if err != nil || !info.Mode().IsRegular() {
		return nil, nil
	}
	return r.ReadFile(p)
}

// ignored reports whether p (a slash path from the root) is ignored.
func (g *ignoreRules) ignored(p string, isDir bool) bool {
	ignored := false
	apply := func(pats []ignorePattern, rel string) {
		for _, pat := range pats {
			if pat.dirOnly && !isDir {
				continue
			}
			subject := rel
			if pat.base {
				subject = path.Base(rel)
			}
			if pat.re.MatchString(subject) {
				ignored = !pat.negate
			}
		}
	}
	apply(g.exclude, p)
	if pats, ok := g.byDir[""]; ok {
		apply(pats, p)
	}
	for i := range len(p) {
		if p[i] == '/' {
			if pats, ok := g.byDir[p[:i]]; ok {
				apply(pats, p[i+1:])
			}
		}
	}
	return ignored
}

// parseIgnore reads the patterns of one ignore file; a pattern that cannot
// be read matches nothing, as in git.
func parseIgnore(data []byte) []ignorePattern {
	var pats []ignorePattern
	lines := bufio.NewScanner(bytes.NewReader(data))
	lines.Buffer(nil, 1<<20)
	for lines.Scan() {
		line := trimTrailingSpaces(strings.TrimSuffix(lines.Text(), "\r"))
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var p ignorePattern
		if p.negate = strings.HasPrefix(line, "!"); p.negate {
			line = line[1:]
		}
		if p.dirOnly = strings.HasSuffix(line, "/") && !strings.HasSuffix(line, `\/`); p.dirOnly {
			line = strings.TrimSuffix(line, "/")
		}
		p.base = !strings.Contains(line, "/")
		line = strings.TrimPrefix(line, "/")
		if line == "" {
			continue
		}
		re, err := regexp.Compile("^" + globRegexp(line) + "$")
		if err != nil {
			continue
		}
		p.re = re
		pats = append(pats, p)
	}
	return pats
}

// trimTrailingSpaces drops trailing spaces unless escaped with a backslash.
func trimTrailingSpaces(s string) string {
	end := len(s)
	for end > 0 && s[end-1] == ' ' {
		if end >= 2 && s[end-2] == '\\' {
			break
		}
		end--
	}
	return s[:end]
}

// globRegexp translates a gitignore glob into a regular expression.
func globRegexp(glob string) string {
	var b strings.Builder
	for i := 0; i < len(glob); i++ {
		c := glob[i]
		atSegment := i == 0 || glob[i-1] == '/'
		switch {
		case c == '*' && atSegment && strings.HasPrefix(glob[i:], "**/"):
			b.WriteString("(?:.*/)?")
			i += 2
		case c == '*' && atSegment && glob[i:] == "**":
			b.WriteString(".*")
			i++
		case c == '*':
			b.WriteString("[^/]*")
			for i+1 < len(glob) && glob[i+1] == '*' {
				i++
			}
		case c == '?':
			b.WriteString("[^/]")
		case c == '[':
			class, n := globClass(glob[i:])
			if n == 0 {
				b.WriteString(`\[`)
				continue
			}
			b.WriteString(class)
			i += n - 1
		case c == '\\' && i+1 < len(glob):
			i++
			b.WriteString(regexp.QuoteMeta(glob[i : i+1]))
		default:
			b.WriteString(regexp.QuoteMeta(glob[i : i+1]))
		}
	}
	return b.String()
}

// globClass translates the bracket expression at the start of s and
// returns its length, or 0 when it is not closed.
func globClass(s string) (string, int) {
	i := 1
	var b strings.Builder
	b.WriteString("[")
	if i < len(s) && (s[i] == '!' || s[i] == '^') {
		b.WriteString("^/")
		i++
	}
	first := true
	for ; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ']' && !first:
			return b.String() + "]", i + 1
		case c == '\\' && i+1 < len(s):
			i++
			b.WriteString(regexp.QuoteMeta(s[i : i+1]))
		case c == '-':
			b.WriteByte('-')
		case c == '[' && strings.HasPrefix(s[i:], "[:"):
			end := strings.Index(s[i+2:], ":]")
			if end < 0 {
				b.WriteString(`\[`)
				break
			}
			b.WriteString(s[i : i+2+end+2]) // a POSIX class: RE2 reads it the same
			i += 2 + end + 1
		default:
			b.WriteString(regexp.QuoteMeta(s[i : i+1]))
		}
		first = false
	}
	return "", 0
}

// cacheDirNames are directories toolchains fill on their own: caches,
// installed dependencies, virtual environments. They are never part of a
// workspace, whatever a .gitignore says.
var cacheDirNames = []string{
	"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".hypothesis", ".tox", ".nox",
	"node_modules", ".gradle",
}

// IsCacheDirName reports whether a directory of this name holds what a
// toolchain made on its own, never the project's sources.
func IsCacheDirName(name string) bool { return slices.Contains(cacheDirNames, name) }

// cacheDirTag begins a CACHEDIR.TAG file (bford.info/cachedir): Cargo's
// target/ and the Python tools' caches carry one.
const cacheDirTag = "Signature: 8a477f597d28d172789f06886806bc55"

// isOutputDir reports whether directory p is a cache or build output by
// what it holds or stands beside: a cache by name, a virtual environment
// (pyvenv.cfg, whatever its name), a tagged cache directory, Cargo's
// target/ beside Cargo.toml, Gradle's build/ beside its build script.
// Other build/ and dist/ directories are kept: in some projects they are
// sources.
func isOutputDir(r *os.Root, p string) bool {
	name := path.Base(p)
	if IsCacheDirName(name) {
		return true
	}
	has := func(rel string) bool {
		info, err := r.Lstat(rel)
		return err == nil && info.Mode().IsRegular()
	}
	if has(path.Join(p, "pyvenv.cfg")) {
		return true
	}
	if tag, err := readRegularFile(r, path.Join(p, "CACHEDIR.TAG")); err == nil && bytes.HasPrefix(tag, []byte(cacheDirTag)) {
		return true
	}
	parent := path.Dir(p)
	switch name {
	case "target":
		return has(path.Join(parent, "Cargo.toml"))
	case "build":
		return has(path.Join(parent, "build.gradle")) || has(path.Join(parent, "build.gradle.kts"))
	}
	return false
}
