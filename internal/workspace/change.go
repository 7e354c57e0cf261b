package workspace

import (
	"bytes"
	"slices"
)

// Changes returns what turns before into after: the files after writes
// (added, or different in content or executable bit) and the paths it
// no longer holds, each in path order. Content shared by both sides, as a
// file a tool left alone shares its bytes, compares at no cost.
func Changes(before, after []File) (writes []File, deletes []string) {
	old := ByPath(before)
	kept := make(map[string]bool, len(after))
	for _, f := range after {
		kept[f.Path] = true
		prev, had := old[f.Path]
		if had && prev.FileMode() == f.FileMode() && bytes.Equal(prev.Data, f.Data) {
			continue
		}
		writes = append(writes, f)
	}
	for _, f := range before {
		if !kept[f.Path] {
			deletes = append(deletes, f.Path)
		}
	}
	Sort(writes)
	slices.Sort(deletes)
	return writes, deletes
}

// Apply is the inverse of Changes: files with writes added or put in
// place of the files of their paths, and deletes taken out, in path
// order.
func Apply(files, writes []File, deletes []string) []File {
	replaced := make(map[string]bool, len(writes)+len(deletes))
	for _, f := range writes {
		replaced[f.Path] = true
	}
	for _, p := range deletes {
		replaced[p] = true
	}
	out := make([]File, 0, len(files)+len(writes))
	for _, f := range files {
		if !replaced[f.Path] {
			out = append(out, f)
		}
	}
	out = append(out, writes...)
	Sort(out)
	return out
}
