// Package policy is the static safety check run on generated code before it
// executes: it finds, by category, constructs a person may want to review
// (spawning processes, networking, dynamic code, native code, writes and
// deletions outside the working directory, reading credentials) and reports
// syntax errors, as findings a model can act on.
//
// The check is a review aid, not a boundary: the sandbox enforces isolation.
// The rules look at names, imports and literal arguments, so they catch what
// a model writes naturally and report it precisely; they do not attempt to
// prove the absence of every obfuscated route to a capability.
//
// Only the attempt's own lines are judged (Changes): the user's code is
// theirs. Test files are checked with the same rules as other files, but
// for networking: a test that serves and calls this machine is what a test
// of a server or a client does, and only a literal address of another host
// in a test is a finding.
package policy

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Categories of denied constructs; the names are the ones ParseAllow accepts.
const (
	Process  = "process"   // spawning processes
	Network  = "network"   // opening network connections or listeners
	Dynamic  = "dynamic"   // evaluating or loading code at run time
	Native   = "native"    // unsafe memory, raw syscalls, foreign code
	AbsWrite = "abs-write" // writing or deleting at a literal absolute path
	// Credentials is reading credential files or variables.
	Credentials = "credentials"
)

// RuleSyntax is the rule of a finding for source that does not parse. It is
// not a category and cannot be allowed.
const RuleSyntax = "syntax"

var categories = []string{Process, Network, Dynamic, Native, AbsWrite, Credentials}

// ErrUnknownCategory reports a category name that is not one of Categories.
var ErrUnknownCategory = errors.New("unknown policy category")

// Categories returns the category names in a stable order.
func Categories() []string { return slices.Clone(categories) }

// Rules says which categories are denied. It lists the allowed ones so that
// the zero value, like DefaultRules, denies everything; it is plain data so
// it can travel in workflow and activity payloads.
type Rules struct {
	Allowed []string `json:"allowed,omitempty"`
}

// DefaultRules denies every category.
func DefaultRules() Rules { return Rules{} }

// Allow returns a copy of r that also allows the given categories.
func (r Rules) Allow(names ...string) (Rules, error) {
	out := Rules{Allowed: slices.Clone(r.Allowed)}
	for _, n := range names {
		if !slices.Contains(categories, n) {
			return r, fmt.Errorf("%w %q (known: %s)", ErrUnknownCategory, n, strings.Join(categories, ", "))
		}
		if !slices.Contains(out.Allowed, n) {
			out.Allowed = append(out.Allowed, n)
		}
	}
	slices.Sort(out.Allowed)
	return out, nil
}

// ParseAllow builds rules from a comma-separated list of categories to allow,
// such as "network,process"; blanks around names are ignored and an empty
// list denies everything.
func ParseAllow(list string) (Rules, error) {
	var names []string
	for _, n := range strings.Split(list, ",") {
		if n = strings.TrimSpace(n); n != "" {
			names = append(names, n)
		}
	}
	r, err := DefaultRules().Allow(names...)
	if err != nil {
		return Rules{}, fmt.Errorf("parse allow: %w", err)
	}
	return r, nil
}

// Denies reports whether the category is denied.
func (r Rules) Denies(category string) bool { return !slices.Contains(r.Allowed, category) }

// Denied returns the denied categories in the order of Categories.
func (r Rules) Denied() []string {
	out := []string{}
	for _, c := range categories {
		if r.Denies(c) {
			out = append(out, c)
		}
	}
	return out
}

// Finding is one violation or syntax error. Line is 1-based; 0 means the
// position is unknown.
type Finding struct {
	File    string `json:"file"`
	Line    int    `json:"line"`
	Rule    string `json:"rule"`
	Message string `json:"message"`
}

// String formats the finding as "file:line: [rule] message".
func (f Finding) String() string {
	return fmt.Sprintf("%s:%d: [%s] %s", f.File, f.Line, f.Rule, f.Message)
}

// summaryCap bounds how many findings a prompt carries; the first few are
// what a model can fix in one attempt anyway.
const summaryCap = 40

// Summary renders findings compactly for a prompt: one per line, at most
// summaryCap of them, then how many were left out. It returns "" for none.
// Control characters (a file name may hold a newline) become spaces so each
// finding stays on its own line.
func Summary(findings []Finding) string {
	if len(findings) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d policy finding(s):\n", len(findings))
	for i, f := range findings {
		if i == summaryCap {
			fmt.Fprintf(&b, "... and %d more\n", len(findings)-summaryCap)
			break
		}
		b.WriteString(strings.Map(func(r rune) rune {
			if r < ' ' || r == 0x7f {
				return ' '
			}
			return r
		}, f.String()))
		b.WriteByte('\n')
	}
	return b.String()
}

// Merge joins lists of findings into one, sorted by file and line, with
// one finding per file, line and rule.
func Merge(lists ...[]Finding) []Finding {
	var out []Finding
	for _, l := range lists {
		out = append(out, l...)
	}
	sortFindings(out)
	return dedupe(out)
}

// sortFindings orders findings by file, line, rule and message.
func sortFindings(fs []Finding) {
	slices.SortFunc(fs, func(a, b Finding) int {
		if c := strings.Compare(a.File, b.File); c != 0 {
			return c
		}
		if a.Line != b.Line {
			return a.Line - b.Line
		}
		if c := strings.Compare(a.Rule, b.Rule); c != 0 {
			return c
		}
		return strings.Compare(a.Message, b.Message)
	})
}
