package repomap

import (
	"regexp"
	"strings"
)

var (
	pyDef   = regexp.MustCompile(`^(?:async\s+)?def\s+(\w+)\s*(\([^)]*\)?)?`)
	pyClass = regexp.MustCompile(`^class\s+(\w+)\s*(\([^)]*\))?`)
)

// pythonSymbols is the extractor used when ctags is not installed: the
// functions and classes at the top level of a module, and the methods
// directly inside each class.
func pythonSymbols(src []byte) []Symbol {
	var out []Symbol
	class, memberIndent := "", ""
	for i, line := range strings.Split(string(src), "\n") {
		body := strings.TrimLeft(line, " \t")
		indent := line[:len(line)-len(body)]
		if body == "" || strings.HasPrefix(body, "#") {
			continue
		}
		if indent == "" {
			class, memberIndent = "", ""
			if m := pyClass.FindStringSubmatch(body); m != nil {
				class = m[1]
				out = append(out, Symbol{Kind: "class", Name: m[1], Line: i + 1, Text: oneLine("class " + m[1] + m[2])})
			} else if m := pyDef.FindStringSubmatch(body); m != nil {
				out = append(out, Symbol{Kind: "function", Name: m[1], Line: i + 1, Text: oneLine(defText(body, m))})
			}
			continue
		}
		if class == "" {
			continue
		}
		if memberIndent == "" {
			memberIndent = indent // the first indented line sets the class body's level
		}
		if indent != memberIndent {
			continue
		}
		if m := pyDef.FindStringSubmatch(body); m != nil {
			out = append(out, Symbol{Kind: "member", Name: m[1], Parent: class, Line: i + 1, Text: oneLine(defText(body, m))})
		}
	}
	return out
}

// defText shows a def with its parameters; a parameter list that goes on
// past the line is shown as "(…)".
func defText(body string, m []string) string {
	prefix := "def "
	if strings.HasPrefix(body, "async") {
		prefix = "async def "
	}
	params := m[2]
	if params == "" || !strings.HasSuffix(params, ")") {
		params = "(…)"
	}
	return prefix + m[1] + params
}
