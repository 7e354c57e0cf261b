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

// costText is what a task's model calls cost, or "unknown" when a model
// without a known price made some of them (a price of $0 would mislead).
func costText(u activities.Usage) string {
	switch {
	case u.Unpriced == 0:
		return fmt.Sprintf("$%.4f", u.CostUSD)
	case u.CostUSD == 0:
		return "unknown"
	}
	return fmt.Sprintf("$%.4f and unknown", u.CostUSD)
}

// printModelUsage lists the tokens and cost of each model that answered.
func printModelUsage(w io.Writer, prefix string, u activities.Usage) {
	for _, m := range u.PerModel {
		fmt.Fprintf(w, "%s%s: %d in, %d out (%d calls, cost %s)\n", prefix, termsafe.Line(m.Model), m.PromptTokens, m.CompletionTokens,
			m.Calls, costText(activities.Usage{CostUSD: m.CostUSD, Unpriced: m.Unpriced}))
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
