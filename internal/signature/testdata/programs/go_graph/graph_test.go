package graph

import "testing"

func TestLink(t *testing.T) {
	g := New()
	g.Link("x", "y")
	if len(g.edges["x"]) != 1 {
		t.Fail()
	}
}
