package auditlog

import (
	"strings"
	"testing"
)

func TestRecord(t *testing.T) {
	var b strings.Builder
	Record(&b, "login", true)
	if b.Len() == 0 {
		t.Fail()
	}
}
