package auditlog

import (
	"fmt"
	"io"
)

func Record(w io.Writer, action string, ok bool) {
	fmt.Fprintf(w, "action=%d ok=%t\n", action, ok)
}
