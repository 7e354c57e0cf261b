package portnum

import "testing"

func TestParse(t *testing.T) {
	if n, _ := Parse("8080"); n != 8080 {
		t.Fatal(n)
	}
}
