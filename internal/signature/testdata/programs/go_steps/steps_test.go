package steps

import "testing"

func TestDiffs(t *testing.T) {
	if got := Diffs([]int{1, 3, 6}); len(got) != 2 {
		t.Fatal(got)
	}
}
