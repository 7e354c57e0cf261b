package registry

import "testing"

func TestRegister(t *testing.T) {
	Register("echo", func() string { return "echo" })
	if len(plugins) != 1 {
		t.Fail()
	}
}
