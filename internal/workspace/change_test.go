package workspace

import (
	"reflect"
	"testing"
)

func TestChanges(t *testing.T) {
	before := []File{
		{Path: "b", Data: []byte("b")},
		{Path: "a", Data: []byte("a")},
		{Path: "run.sh", Mode: 0o755, Data: []byte("#!/bin/sh\n")},
		{Path: "gone", Data: []byte("x")},
		{Path: "default", Data: []byte("d")},
	}
	after := []File{
		{Path: "new", Data: []byte("n")},
		{Path: "a", Data: []byte("a")},                             // same content, a new slice
		{Path: "b", Data: []byte("B")},                             // new content
		{Path: "run.sh", Mode: 0o644, Data: []byte("#!/bin/sh\n")}, // mode only
		{Path: "default", Mode: 0o644, Data: []byte("d")},          // 0 is 0o644: unchanged
	}
	writes, deletes := Changes(before, after)
	var paths []string
	for _, f := range writes {
		paths = append(paths, f.Path)
	}
	if want := []string{"b", "new", "run.sh"}; !reflect.DeepEqual(paths, want) {
		t.Errorf("writes %v, want %v", paths, want)
	}
	if want := []string{"gone"}; !reflect.DeepEqual(deletes, want) {
		t.Errorf("deletes %v, want %v", deletes, want)
	}
	if w, d := Changes(before, before); len(w)+len(d) != 0 {
		t.Errorf("no change gave writes %v, deletes %v", w, d)
	}
}
