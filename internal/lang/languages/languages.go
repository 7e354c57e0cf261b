// Package languages is the list of the languages autocoder knows: every
// answer to "which languages" (flags, help, errors, the README) comes from
// here. Adding a language is a folder under internal/lang and one line in
// All.
package languages

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/autocoder/autocoder/internal/lang"
	"github.com/autocoder/autocoder/internal/lang/cpp"
	"github.com/autocoder/autocoder/internal/lang/golang"
	"github.com/autocoder/autocoder/internal/lang/java"
	"github.com/autocoder/autocoder/internal/lang/node"
	"github.com/autocoder/autocoder/internal/lang/python"
	"github.com/autocoder/autocoder/internal/lang/rust"
	"github.com/autocoder/autocoder/internal/policy"
	"github.com/autocoder/autocoder/internal/repomap"
)

// All returns the languages, in the order help and errors list them.
func All() []lang.Language {
	return []lang.Language{
		python.Language(),
		golang.Language(),
		node.JavaScript(),
		node.TypeScript(),
		rust.Language(),
		cpp.Language(),
		java.Language(),
	}
}

// LineRules are the policy's line rules: those every language shares and
// each language's own. All apply to every check, whatever the task's
// language: a Python task may still write a shell script or a JavaScript
// file.
func LineRules() []lang.LineRules {
	sets := []lang.LineRules{policy.Shared}
	for _, l := range All() {
		r := l.Policy.LineRules
		if len(r.Rules) > 0 && !slices.ContainsFunc(sets, func(s lang.LineRules) bool { return s.Language == r.Language }) {
			sets = append(sets, r)
		}
	}
	return sets
}

// Extractors are the languages' own symbol readers for the repository
// map, by file name ending; the others' files go to Universal Ctags.
func Extractors() map[string]repomap.Extractor {
	out := map[string]repomap.Extractor{}
	for _, l := range All() {
		if l.Symbols == nil {
			continue
		}
		for _, ext := range l.Extensions {
			out[ext] = repomap.Extractor{Name: l.Name + " reader", Symbols: l.Symbols}
		}
	}
	return out
}

// Default is the language of a task that names none and starts from no
// project.
const Default = "python"

// Names lists the canonical names, in order.
func Names() []string {
	var names []string
	for _, l := range All() {
		names = append(names, l.Name)
	}
	return names
}

// List is the names for people: "python, go, ...".
func List() string { return strings.Join(Names(), ", ") }

// Lookup finds a language by its name or an alias, without case.
func Lookup(name string) (lang.Language, error) {
	n := strings.ToLower(strings.TrimSpace(name))
	for _, l := range All() {
		if l.Name == n || slices.Contains(l.Aliases, n) {
			return l, nil
		}
	}
	return lang.Language{}, fmt.Errorf("unknown language %q (want one of %s)", name, List())
}

// MustLookup is Lookup for a name that has been validated.
func MustLookup(name string) lang.Language {
	l, err := Lookup(name)
	if err != nil {
		panic(err)
	}
	return l
}

// Detection is what Detect decided and why, for the person.
type Detection struct {
	Language lang.Language
	Reason   string // "from go.mod", "the test command runs it", "the task names it", "the default: ..."
}

// Detect picks a task's language: from the project's root files when there
// are any (a project with two languages' markers is the one its test
// command runs, else the higher Rank), else from the task's text, else
// Default. rootFiles are the names of the files at the project's root.
func Detect(rootFiles []string, testCmd, task string) Detection {
	var marked []lang.Language
	var markers = map[string]string{}
	for _, l := range All() {
		if m, ok := hasMarker(l.Detect.Markers, rootFiles); ok {
			marked = append(marked, l)
			markers[l.Name] = m
		}
	}
	if len(marked) > 0 {
		if l, ok := runBy(marked, testCmd); ok {
			return Detection{Language: l, Reason: fmt.Sprintf("from %s, and the test command runs it", markers[l.Name])}
		}
		best := marked[0]
		for _, l := range marked[1:] {
			if l.Detect.Rank > best.Detect.Rank {
				best = l
			}
		}
		return Detection{Language: best, Reason: "from " + markers[best.Name]}
	}
	if l, ok := runBy(All(), testCmd); ok {
		return Detection{Language: l, Reason: "the test command runs it"}
	}
	for _, l := range All() {
		if l.Detect.Task != "" && regexp.MustCompile(`(?i)`+l.Detect.Task).MatchString(task) {
			return Detection{Language: l, Reason: "the task names it"}
		}
	}
	return Detection{Language: MustLookup(Default), Reason: "the default: nothing named another"}
}

// hasMarker finds the first of markers among the names.
func hasMarker(markers, names []string) (string, bool) {
	for _, m := range markers {
		for _, n := range names {
			base := path.Base(n)
			if base == m || strings.HasPrefix(m, "*") && strings.HasSuffix(base, m[1:]) {
				return base, true
			}
		}
	}
	return "", false
}

// runBy finds the one language among ls whose test programs the command
// names as a word; none or several is no answer.
func runBy(ls []lang.Language, testCmd string) (lang.Language, bool) {
	words := strings.FieldsFunc(testCmd, func(r rune) bool {
		return r == ' ' || r == '\t' || r == ';' || r == '&' || r == '|' || r == '(' || r == ')' || r == '\n'
	})
	var found []lang.Language
	for _, l := range ls {
		for _, w := range words {
			if slices.Contains(l.Detect.Commands, path.Base(w)) {
				found = append(found, l)
				break
			}
		}
	}
	if len(found) == 1 {
		return found[0], true
	}
	return lang.Language{}, false
}
