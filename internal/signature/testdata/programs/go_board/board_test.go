package board

import "testing"

func TestColumn(t *testing.T) {
	var b Board
	if len(b.Column(1)) != 3 {
		t.Fail()
	}
}
