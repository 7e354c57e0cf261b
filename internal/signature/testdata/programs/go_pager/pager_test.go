package pager

import "testing"

func TestLastPage(t *testing.T) {
	items := []string{"a", "b", "c", "d", "e"}
	if got := Page(items, 2, 2); len(got) != 1 {
		t.Fatal(got)
	}
}
