package starter

import (
	"fmt"
	"io"

	"github.com/autocoder/autocoder/internal/policy"
	"github.com/autocoder/autocoder/internal/termsafe"
	"github.com/autocoder/autocoder/workflows"
)

// warningsShown bounds the safety warnings a human view lists; `status
// --json` has them all.
const warningsShown = 10

// printWarnings lists the safety policy's warnings about an attempt's own
// code: what it does that a person may want to review.
func printWarnings(w io.Writer, prefix string, warnings []policy.Finding) {
	for i, f := range warnings {
		if i == warningsShown {
			fmt.Fprintf(w, "%s~ and %d more safety warning(s) (status --json lists them all)\n", prefix, len(warnings)-warningsShown)
			return
		}
		fmt.Fprintf(w, "%s~ safety: %s\n", prefix, termsafe.Line(f.String()))
	}
}

// reviewWarnings says, where a result is written, what in it the safety
// policy warned about.
func reviewWarnings(w io.Writer, cp workflows.Checkpoint) {
	if len(cp.Warnings) == 0 {
		return
	}
	fmt.Fprintf(w, "review before you run it: the safety policy warns about %d place(s) in checkpoint #%d's code\n", len(cp.Warnings), cp.N)
	printWarnings(w, "  ", cp.Warnings)
}
