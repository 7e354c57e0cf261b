package golang

import (
	"regexp"
	"strings"

	"github.com/autocoder/autocoder/internal/lang"
)

// digestBytes bounds a digest: half of what a check's output keeps.
const digestBytes = 2000

var (
	compileRe = regexp.MustCompile(`^\S+\.go:\d+(?::\d+)?: `)
	failRe    = regexp.MustCompile(`^\s*--- FAIL: `)
	crashRe   = regexp.MustCompile(`^(?:panic: |fatal error: )`)
	pkgFailRe = regexp.MustCompile(`^FAIL\s+\S+`)
	goroutine = regexp.MustCompile(`^goroutine \d+ \[`)
	// goRootFrame is a frame's location in Go's own source tree.
	goRootFrame = regexp.MustCompile(`_testmain\.go|/go[^/]*/src/|/usr/lib/go[^/]*/|/golang[^/]*/src/`)
)

// digest keeps what go test says of a failure, in its order: the
// compiler's errors, each failing test with its own lines, a panic or
// fatal error with the tests it interrupted and the first frames of its
// goroutine that are not the runtime's or the testing package's, and
// the packages that failed. The hundreds of goroutines a timeout or a
// deadlock dumps are left out.
func digest(output string) string {
	lines := strings.Split(output, "\n")
	e := lang.NewExcerpt(digestBytes)
	found := false
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		switch {
		case compileRe.MatchString(l), pkgFailRe.MatchString(l), strings.HasPrefix(l, "# "):
			found = e.Add(l) || found
		case failRe.MatchString(l):
			found = true
			block := []string{l}
			for i+1 < len(lines) && len(block) < 12 && indentedMore(lines[i+1], l) {
				i++
				block = append(block, lines[i])
			}
			e.Add(block...)
		case crashRe.MatchString(l):
			found = true
			var block []string
			i, block = crash(lines, i)
			e.Add(block...)
		}
	}
	if !found {
		return ""
	}
	return e.String()
}

// indentedMore reports a line that belongs to the --- FAIL line head:
// indented deeper, or a subtest's own --- FAIL.
func indentedMore(l, head string) bool {
	if strings.TrimSpace(l) == "" {
		return false
	}
	return indent(l) > indent(head)
}

func indent(l string) int { return len(l) - len(strings.TrimLeft(l, " \t")) }

// crash reads a panic or fatal error from line i: its message, the tests
// it names as running, and from the goroutine dump that follows, the
// frames in the project's code (not Go's own packages), each once, at most
// eight: where a panicking test failed, or where the tests a timeout or a
// deadlock stopped were waiting. It returns the last line of the dump.
func crash(lines []string, i int) (int, []string) {
	block := []string{lines[i]}
	j := i + 1
	for ; j < len(lines) && !goroutine.MatchString(lines[j]); j++ {
		if t := strings.TrimSpace(lines[j]); t != "" && len(block) < 8 {
			block = append(block, lines[j])
		}
	}
	seen := map[string]bool{}
	frames := 0
	for ; j < len(lines) && !pkgFailRe.MatchString(lines[j]) && !failRe.MatchString(lines[j]); j++ {
		loc := lines[j]
		if !strings.HasPrefix(loc, "\t") || j == 0 || goRootFrame.MatchString(loc) || frames >= 8 {
			continue
		}
		at, _, _ := strings.Cut(strings.TrimSpace(loc), " +0x")
		if seen[at] {
			continue
		}
		seen[at] = true
		block = append(block, lines[j-1], "\t"+at)
		frames++
	}
	return j - 1, block
}
