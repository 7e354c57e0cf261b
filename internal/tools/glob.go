package tools

import (
	"fmt"
	"path"
	"strings"
)

// glob matches workspace paths. Segments are matched with path.Match, and
// "**" matches any number of whole segments, including none. A pattern
// without a slash matches at any depth, like .gitignore, so "*.py" finds
// every Python file; a pattern that matches a directory matches everything
// beneath it, so "app" and "app/models" list those trees.
type glob struct {
	segs []string // nil matches everything
}

func parseGlob(pattern string) (glob, error) {
	p := strings.TrimSpace(pattern)
	p = strings.TrimPrefix(p, "./")
	p = strings.Trim(p, "/")
	if p == "" || p == "." || p == "**" {
		return glob{}, nil
	}
	if !strings.Contains(p, "/") {
		p = "**/" + p
	}
	segs := strings.Split(p, "/")
	for _, s := range segs {
		if _, err := path.Match(s, ""); err != nil {
			return glob{}, fmt.Errorf("bad glob %q: %w", pattern, err)
		}
	}
	return glob{segs: segs}, nil
}

// match reports whether p or one of its parent directories matches.
func (g glob) match(p string) bool {
	if g.segs == nil {
		return true
	}
	return matchSegs(g.segs, strings.Split(p, "/"))
}

// matchSegs matches pattern segments against a prefix of the path's
// segments (a matched directory covers its tree).
func matchSegs(pat, segs []string) bool {
	// Any reachable position that consumed at least one segment is a match
	// of the path or of a directory above it.
	reach := reachable(pat, segs)
	for j := 1; j < len(reach); j++ {
		if reach[j] {
			return true
		}
	}
	return false
}

// MatchPath reports whether the whole of the slash-separated path p
// matches pattern, segment by segment with path.Match, where a "**"
// segment matches any number of whole segments (packages/**/package.json).
func MatchPath(pattern, p string) bool {
	segs := strings.Split(p, "/")
	return reachable(strings.Split(pattern, "/"), segs)[len(segs)]
}

// reachable is a dynamic program over (pattern, path) positions, so
// repeated "**" cost no backtracking: reach[j] says the whole pattern
// matches the path's first j segments.
func reachable(pat, segs []string) []bool {
	reach := make([]bool, len(segs)+1)
	reach[0] = true
	for _, ps := range pat {
		next := make([]bool, len(segs)+1)
		for j := range reach {
			if !reach[j] {
				continue
			}
			if ps == "**" {
				for k := j; k <= len(segs); k++ {
					next[k] = true
				}
				break // every later j is already covered
			}
			if j < len(segs) {
				if ok, _ := path.Match(ps, segs[j]); ok {
					next[j+1] = true
				}
			}
		}
		reach = next
	}
	return reach
}
