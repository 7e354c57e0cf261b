package signature

import (
	"github.com/autocoder/autocoder/internal/lang"

	"regexp"
	"strings"
)

var (
	// pytest's location line closing a failure: "calc.py:12: KeyError".
	pyLocRe = regexp.MustCompile(`^(?:\S+\.py|<path>):(?:\d+|<n>): ([A-Za-z_][\w.]*)$`)
	// An exception line: "KeyError: 'x'" or a bare "StopIteration".
	pyExcRe     = regexp.MustCompile(`^([A-Za-z_][\w.]*)(?::(?:\s(.*))?)?$`)
	pySummaryRe = regexp.MustCompile(`^(FAILED|ERROR) (\S+)(?: - (.*))?$`)
	pyCollectRe = regexp.MustCompile(`^_+ ERROR collecting \S+ _+$`)
)

const pyTraceback = "Traceback (most recent call last):"

// pyBlock is one failure in pytest's report: its E lines and the type
// named by the location line that closes it.
type pyBlock struct {
	eLines []string
	loc    string
}

// exception returns the block's exception type and message.
func (b pyBlock) exception() (typ, msg string) {
	for _, e := range b.eLines {
		if t, m, ok := parseExc(e); ok {
			return t, m
		}
	}
	typ = b.loc
	if len(b.eLines) > 0 {
		msg = b.eLines[0]
	}
	if typ == "" && strings.HasPrefix(msg, "assert ") {
		typ = "AssertionError"
	}
	return typ, msg
}

// parseExc recognizes "Type: message" where Type names an exception.
func parseExc(line string) (typ, msg string, ok bool) {
	m := pyExcRe.FindStringSubmatch(line)
	if m == nil || !isExcName(m[1]) {
		return "", "", false
	}
	return m[1], strings.TrimSpace(m[2]), true
}

var pyBareExceptions = map[string]bool{
	"StopIteration": true, "StopAsyncIteration": true, "KeyboardInterrupt": true,
	"GeneratorExit": true, "SystemExit": true, "Exception": true,
}

func isExcName(name string) bool {
	short := shortName(name)
	for _, suffix := range []string{"Error", "Exception", "Warning"} {
		if strings.HasSuffix(short, suffix) && len(short) > len(suffix) {
			return true
		}
	}
	return pyBareExceptions[short]
}

// shortName drops the module path: "json.decoder.JSONDecodeError".
func shortName(name string) string {
	return name[strings.LastIndexByte(name, '.')+1:]
}

// parsePython reads pytest reports and plain tracebacks. The first failure
// decides the kind and shape; later ones only add key lines.
func ParsePython(lines []string) lang.Finding {
	var (
		blocks     []pyBlock
		cur        pyBlock
		summaries  []string
		summaryMsg string
		topExc     []string // unindented exception lines
		traceback  bool
		collecting bool
		collectMsg string
	)
	closeBlock := func() {
		if len(cur.eLines) > 0 {
			blocks = append(blocks, cur)
		}
		cur = pyBlock{}
	}
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "E ") || l == "E":
			if e := strings.TrimSpace(l[1:]); e != "" {
				cur.eLines = append(cur.eLines, e)
			}
		case (strings.Contains(l, ".py:") || strings.HasPrefix(l, "<path>:")) && pyLocRe.MatchString(l):
			cur.loc = pyLocRe.FindStringSubmatch(l)[1]
			closeBlock()
		case strings.HasPrefix(l, "_") && pyCollectRe.MatchString(l):
			closeBlock()
			collecting = true
			if i+1 < len(lines) {
				collectMsg = lines[i+1]
			}
		case (strings.HasPrefix(l, "FAILED ") || strings.HasPrefix(l, "ERROR ")) && pySummaryRe.MatchString(l):
			closeBlock()
			summaries = append(summaries, l)
			if m := pySummaryRe.FindStringSubmatch(l); summaryMsg == "" && m[3] != "" {
				summaryMsg = m[3]
			}
		case strings.HasPrefix(l, pyTraceback):
			traceback = true
		case strings.HasPrefix(l, "=") || strings.HasPrefix(l, "_"):
			closeBlock()
		case l != "" && l[0] != ' ' && l[0] != '\t':
			if _, _, ok := parseExc(l); ok {
				topExc = append(topExc, l)
			}
		}
	}
	closeBlock()

	var keys []string
	typ, msg := "", ""
	for i, b := range blocks[:min(len(blocks), maxCandidates)] {
		t, m := b.exception()
		if i == 0 {
			typ, msg = t, m
		}
		keys = append(keys, excLine(t, m))
	}
	if typ == "" && len(topExc) > 0 {
		// A traceback ends with the exception that escaped; a chained one
		// prints the cause first, so the last line wins.
		line := topExc[0]
		if traceback {
			line = topExc[len(topExc)-1]
		}
		typ, msg, _ = parseExc(line)
		keys = append(keys, line)
	}
	if typ == "" && summaryMsg != "" {
		if t, m, ok := parseExc(summaryMsg); ok {
			typ, msg = t, m
		} else if strings.HasPrefix(summaryMsg, "assert ") {
			typ, msg = "AssertionError", summaryMsg
		}
	}
	keys = append(keys, summaries...)
	switch {
	case typ != "":
		return lang.Finding{Kind: "python:" + shortName(typ), Shape: normLine(excLine(typ, msg)), Keys: keys}
	case collecting:
		return lang.Finding{Kind: "pytest:collection-error", Shape: normLine(collectMsg), Keys: append([]string{collectMsg}, keys...)}
	case len(summaries) > 0:
		return lang.Finding{Kind: "pytest:test-fail", Shape: normLine(summaries[0]), Keys: keys}
	}
	return lang.Finding{}
}

func excLine(typ, msg string) string {
	if msg == "" {
		return typ
	}
	if typ == "" {
		return msg
	}
	return typ + ": " + msg
}
