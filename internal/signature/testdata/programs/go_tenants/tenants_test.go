package tenants

import "testing"

func TestPut(t *testing.T) {
	s := NewStore()
	s.Put("acme", "plan", "pro")
	if s.byTenant["acme"]["plan"] != "pro" {
		t.Fail()
	}
}
