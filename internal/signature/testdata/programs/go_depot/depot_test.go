package depot

import "testing"

func TestFill(t *testing.T) {
	d := &Depot{Stock: map[string]int{}}
	d.Fill("bolts")
}
