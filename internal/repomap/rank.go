package repomap

import (
	"path"
	"regexp"
	"slices"
	"strings"
)

// The points behind a file's score. They are few and fixed so a ranking
// can be explained in one line per file.
const (
	pointsFailingFile  = 100 // named by a failure, or given as failing
	pointsTaskPath     = 50  // its path is in the task
	pointsFailureSym   = 30  // defines a name the failure mentions (per name, at most 3)
	pointsTaskSym      = 20  // defines a name the task mentions (per name, at most 3)
	pointsPathWord     = 5   // a word of the task or failure names its file or directory (at most 2)
	maxNamedSymbols    = 3
	maxPathWords       = 2
	relatedTestDivisor = 2 // a test and the file it tests share half of each other's score
)

// Query is what a map is ranked against.
type Query struct {
	Task         string
	Failure      string   // the last failure's output, if any
	FailingFiles []string // files of recent failures
}

// ranked is a file with its score and the reasons for it.
type ranked struct {
	path    string
	size    int
	symbols []Symbol
	imports []string        // files a test imports
	named   map[string]bool // its symbols the query mentions
	score   int
	reasons []string
}

var (
	identRe     = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)
	pathRe      = regexp.MustCompile(`[A-Za-z0-9_.\-/]*[A-Za-z0-9_\-]\.[A-Za-z0-9]+|[A-Za-z0-9_\-]+(?:/[A-Za-z0-9_.\-]+)+`)
	slashPathRe = regexp.MustCompile(`[A-Za-z0-9_.\-]*(?:/[A-Za-z0-9_.\-]+)+`)
	// dotted Python module paths, as in imports and tracebacks
	moduleRe = regexp.MustCompile(`[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+`)
)

// stopWords are words of a task too common to say anything about a file.
var stopWords = map[string]bool{
	"the": true, "and": true, "for": true, "with": true, "that": true, "this": true, "from": true, "into": true,
	"not": true, "are": true, "but": true, "fix": true, "add": true, "should": true, "when": true, "test": true,
	"tests": true, "error": true, "file": true, "files": true, "line": true, "make": true, "use": true, "new": true,
	"all": true, "def": true, "func": true, "return": true, "self": true, "none": true, "true": true, "false": true,
	"import": true, "main": true, "init": true, "py": true, "go": true, "src": true, "lib": true, "pkg": true,
	"internal": true, "instead": true, "gives": true, "wrong": true, "assert": true, "failed": true, "passed": true,
}

// words returns the distinct identifiers of text worth matching.
func words(text string) map[string]bool {
	out := map[string]bool{}
	for _, w := range identRe.FindAllString(text, -1) {
		if len(w) >= 3 && !stopWords[strings.ToLower(strings.Trim(w, "_"))] {
			out[w] = true
		}
	}
	return out
}

// maxSameBase is how many files may share a base name for a bare name in
// the text ("store_test.go:12:", as go test prints) to point at them.
const maxSameBase = 3

// mentionsPath reports whether text names file p: by a path ending in it
// or that it ends in (at a slash), by its dotted module path, or by its
// bare name when few files have that name (sameBase counts them).
func mentionsPath(mentioned map[string]bool, p string, sameBase map[string]int) bool {
	base := path.Base(p)
	for m := range mentioned {
		m = strings.TrimPrefix(m, "./")
		switch {
		case m == p, strings.HasSuffix(m, "/"+p):
			return true
		case strings.Contains(m, "/") && strings.HasSuffix(p, "/"+m):
			return true
		case m == base && sameBase[base] <= maxSameBase:
			return true
		}
	}
	return false
}

// pathsIn returns the path-like tokens of text, with dotted module paths
// also read as file paths ("a.b.c" → "a/b/c.py").
func pathsIn(text string) map[string]bool {
	out := map[string]bool{}
	for _, p := range pathRe.FindAllString(text, -1) {
		out[strings.TrimRight(p, ".")] = true
	}
	for _, m := range moduleRe.FindAllString(text, -1) {
		if strings.Count(m, ".") >= 1 {
			out[strings.ReplaceAll(m, ".", "/")+".py"] = true
		}
	}
	return out
}

// score ranks files against q. Every point comes with a reason.
func score(files []*ranked, q Query) {
	taskPaths, failPaths := pathsIn(q.Task), pathsIn(q.Failure)
	for _, p := range q.FailingFiles {
		failPaths[p] = true
	}
	// Words are read from the text without its paths, which match as
	// paths: a traceback's directories say nothing of other files in them.
	taskWords, failWords := words(slashPathRe.ReplaceAllString(q.Task, " ")), words(slashPathRe.ReplaceAllString(q.Failure, " "))
	lowerWords := map[string]bool{}
	for w := range taskWords {
		lowerWords[strings.ToLower(w)] = true
	}
	for w := range failWords {
		lowerWords[strings.ToLower(w)] = true
	}
	sameBase := map[string]int{}
	for _, f := range files {
		sameBase[path.Base(f.path)]++
	}
	for _, f := range files {
		if mentionsPath(failPaths, f.path, sameBase) {
			f.add(pointsFailingFile, "in the failure")
		}
		if mentionsPath(taskPaths, f.path, sameBase) {
			f.add(pointsTaskPath, "named in the task")
		}
		var inFail, inTask []string
		for _, s := range f.symbols {
			switch {
			case failWords[s.Name] && !slices.Contains(inFail, s.Name):
				inFail = append(inFail, s.Name)
			case taskWords[s.Name] && !slices.Contains(inTask, s.Name):
				inTask = append(inTask, s.Name)
			}
		}
		f.named = map[string]bool{}
		for _, n := range slices.Concat(inFail, inTask) {
			f.named[n] = true
		}
		inFail, inTask = inFail[:min(len(inFail), maxNamedSymbols)], inTask[:min(len(inTask), maxNamedSymbols)]
		if len(inFail) > 0 {
			f.add(pointsFailureSym*len(inFail), "defines "+strings.Join(inFail, ", ")+" (in the failure)")
		}
		if len(inTask) > 0 {
			f.add(pointsTaskSym*len(inTask), "defines "+strings.Join(inTask, ", "))
		}
		var hits []string
		for _, part := range pathWords(f.path) {
			if lowerWords[part] && !slices.Contains(hits, part) && len(hits) < maxPathWords {
				hits = append(hits, part)
			}
		}
		if len(hits) > 0 {
			f.add(pointsPathWord*len(hits), `path matches "`+strings.Join(hits, `", "`)+`"`)
		}
	}
	relateTests(files)
}

func (f *ranked) add(points int, reason string) {
	f.score += points
	f.reasons = append(f.reasons, reason)
}

// pathWords are the lower-case names of a path's directories and the stem
// of its file, split at underscores too.
func pathWords(p string) []string {
	var out []string
	for _, part := range strings.Split(strings.TrimSuffix(p, path.Ext(p)), "/") {
		part = strings.ToLower(part)
		out = append(out, part)
		if strings.Contains(part, "_") {
			out = append(out, strings.Split(part, "_")...)
		}
	}
	return out
}

// relateTests shares scores between test files and the files they test,
// from the scores found so far: a test gets half the score of the best
// scored file it tests, and a file half the score of its best scored test.
func relateTests(files []*ranked) {
	base := make(map[*ranked]int, len(files))
	byStem := map[string][]*ranked{}
	byPath := map[string]*ranked{}
	for _, f := range files {
		base[f] = f.score
		byPath[f.path] = f
		if !isTest(f.path) {
			byStem[stem(f.path)] = append(byStem[stem(f.path)], f)
		}
	}
	bestTest := map[*ranked]*ranked{} // tested file → its best scored test
	for _, t := range files {
		if !isTest(t.path) {
			continue
		}
		var best *ranked
		for _, src := range testedBy(t, byStem, byPath) {
			if best == nil || base[src] > base[best] {
				best = src
			}
			if cur := bestTest[src]; cur == nil || base[t] > base[cur] {
				bestTest[src] = t
			}
		}
		if best != nil && base[best]/relatedTestDivisor > 0 {
			t.add(base[best]/relatedTestDivisor, "tests "+best.path)
		}
	}
	for _, f := range files { // in file order, so ties resolve the same way every time
		if t := bestTest[f]; t != nil && base[t]/relatedTestDivisor > 0 {
			f.add(base[t]/relatedTestDivisor, "tested by "+t.path)
		}
	}
}

// testedBy returns the files a test covers: those with its stem (test_x.py,
// x_test.py and x_test.go test x.py or x.go) and the Python modules it
// imports.
func testedBy(t *ranked, byStem map[string][]*ranked, byPath map[string]*ranked) []*ranked {
	out := slices.Clone(byStem[stem(t.path)])
	for _, imp := range t.imports {
		if f, ok := byPath[imp]; ok && !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

func isTest(p string) bool {
	base := path.Base(p)
	return strings.HasPrefix(base, "test_") || strings.HasSuffix(base, "_test.py") || strings.HasSuffix(base, "_test.go") ||
		strings.Contains(base, ".test.") || strings.Contains(base, ".spec.")
}

// stem is a file's name without extension and test affixes.
func stem(p string) string {
	base := strings.TrimSuffix(path.Base(p), path.Ext(p))
	base = strings.TrimPrefix(base, "test_")
	base = strings.TrimSuffix(base, "_test")
	base = strings.TrimSuffix(base, ".test")
	return strings.TrimSuffix(base, ".spec")
}

var pyImport = regexp.MustCompile(`(?m)^\s*(?:from\s+([\w.]+)\s+import|import\s+([\w.]+))`)

// pythonImports returns the module files a Python file imports, as paths.
func pythonImports(src []byte) []string {
	var out []string
	for _, m := range pyImport.FindAllSubmatch(src, -1) {
		mod := string(m[1]) + string(m[2])
		if !strings.HasPrefix(mod, ".") {
			out = append(out, strings.ReplaceAll(mod, ".", "/")+".py")
		}
	}
	return out
}

// Mentioned returns the files of paths, and the directories holding them,
// that text names, read as the ranking reads a task or a failure: a path
// or its tail, a dotted module, a bare file name few files share. It tells
// what else belongs to the work, such as a directory's own instructions.
func Mentioned(paths []string, text string) []string {
	named := pathsIn(text)
	sameBase := map[string]int{}
	dirs := map[string]bool{}
	for _, p := range paths {
		sameBase[path.Base(p)]++
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	var out []string
	for _, p := range paths {
		if mentionsPath(named, p, sameBase) {
			out = append(out, p)
		}
	}
	for m := range named {
		if d := strings.Trim(strings.TrimPrefix(m, "./"), "/"); dirs[d] && !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	slices.Sort(out)
	return out
}
