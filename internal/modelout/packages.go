package modelout

import (
	"regexp"
	"strings"
)

// packagesLine is the line a plan ends with to name the third-party
// packages the task needs: "Packages: name, name".
var packagesLine = regexp.MustCompile(`(?i)^[\s#>*_-]*packages\s*(?:\*\*|__)?\s*:\s*(?:\*\*|__)?(.*)$`)

// ParsePackages returns the packages a plan's "Packages:" line names, in
// order and without repeats; nil when there is no such line or it names
// none ("none", "-"). The last such line outside code blocks wins.
func ParsePackages(text string) []string {
	var last string
	found := false
	outsideFences(planLines(text), func(_ int, line string) {
		if m := packagesLine.FindStringSubmatch(line); m != nil {
			last, found = m[1], true
		}
	})
	if !found {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	for _, p := range strings.FieldsFunc(last, func(r rune) bool { return r == ',' || r == ';' || r == ' ' || r == '\t' }) {
		p = strings.Trim(p, "`*_.'\"")
		if p == "" || seen[p] || strings.EqualFold(p, "none") || p == "-" {
			continue
		}
		seen[p] = true
		out = append(out, p)
	}
	return out
}
