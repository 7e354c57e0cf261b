package python

import (
	"regexp"
	"strings"

	"github.com/autocoder/autocoder/internal/lang"
)

// digestBytes bounds a digest: half of what a check's output keeps.
const digestBytes = 2000

var (
	// sectionRe heads one failure's report: "____ test_add ____", or a
	// collection error's.
	sectionRe = regexp.MustCompile(`^_{3,} (.+?) _{3,}$`)
	// locationRe is where a failure was raised: "calc.py:12: KeyError".
	locationRe = regexp.MustCompile(`^\S+\.py:\d+: \S`)
	// plainTraceRe ends a traceback outside pytest: "KeyError: 'b'".
	plainTraceRe = regexp.MustCompile(`^[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt)\b`)
)

// digest keeps what pytest says of each failure: its heading, its E lines
// (the assertion and its values, or the exception) and where it was
// raised, the first failures first, five E lines each; a traceback outside
// pytest keeps its last frame and exception. The summary at the end stays
// in the output's tail.
func digest(output string) string {
	lines := strings.Split(output, "\n")
	e := lang.NewExcerpt(digestBytes)
	found := false
	var section string
	eLines := 0
	for i, l := range lines {
		switch {
		case sectionRe.MatchString(l):
			section, eLines = l, 0
		case strings.HasPrefix(l, "E   "):
			if section != "" {
				found = true
				if !e.Add(section) {
					return e.String()
				}
				section = ""
			}
			if eLines < 5 {
				e.Add(l)
			}
			eLines++
		case locationRe.MatchString(l) && eLines > 0:
			e.Add(l)
			eLines = 0
		case plainTraceRe.MatchString(l) && i > 0 && strings.HasPrefix(lines[i-1], "    "):
			found = true
			e.Add(lastFrame(lines[:i])...)
			e.Add(l)
		}
	}
	if !found {
		return ""
	}
	return e.String()
}

// lastFrame is a plain traceback's last "File ..." line and its source.
func lastFrame(lines []string) []string {
	for i := len(lines) - 1; i >= 0 && i >= len(lines)-6; i-- {
		if strings.HasPrefix(strings.TrimSpace(lines[i]), "File \"") {
			return lines[i:]
		}
	}
	return nil
}
