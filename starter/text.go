package starter

import (
	"fmt"
	"io"
	"strings"

	"github.com/autocoder/autocoder/activities"
	"github.com/autocoder/autocoder/internal/termsafe"
	"github.com/autocoder/autocoder/workflows"
)

func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}

// usageText is a task's tokens, calls and cost.
func usageText(u activities.Usage) string {
	return fmt.Sprintf("%s (%d calls, cost %s)", u.Tokens(), u.Calls, u.Cost())
}

// printModelUsage lists the tokens and cost of each model that answered.
func printModelUsage(w io.Writer, prefix string, u activities.Usage) {
	for _, m := range u.PerModel {
		fmt.Fprintf(w, "%s%s: %s\n", prefix, termsafe.Line(m.Model), usageText(m.Totals()))
	}
}

// modelLine names the model that answered the last turn, and the models
// it stood in for: "openai:gpt-4.1 (fell back from anthropic:claude-sonnet-4-5: HTTP 503)".
func modelLine(st workflows.Status) string {
	if st.Model == "" {
		return ""
	}
	if st.FellBack == "" {
		return termsafe.Line(st.Model)
	}
	return termsafe.Line(st.Model + " (fell back from " + st.FellBack + ")")
}
