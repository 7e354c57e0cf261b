package loader

import "testing"

func TestHeader(t *testing.T) {
	if h, _ := Header("title\nbody"); h != "title" {
		t.Fail()
	}
}
