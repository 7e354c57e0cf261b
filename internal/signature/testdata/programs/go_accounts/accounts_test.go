package accounts

import "testing"

func TestName(t *testing.T) {
	if Name(1) != "acct" {
		t.Fail()
	}
}
