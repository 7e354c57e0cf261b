package greeter

import "testing"

func TestGreet(t *testing.T) {
	if Greet("ann") != "hello, ann" {
		t.Fail()
	}
}
