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

// tokensText is the tokens of model calls: input, split once any was
// cached into fresh, read from the provider's prompt cache, and written to
// it (each priced on its own), and output.
func tokensText(prompt, cached, written, completion int) string {
	if cached == 0 && written == 0 {
		return fmt.Sprintf("%d in, %d out", prompt, completion)
	}
	s := fmt.Sprintf("%d in (%d fresh, %d cached", prompt, prompt-cached-written, cached)
	if written > 0 {
		s += fmt.Sprintf(", %d written to the cache", written)
	}
	return s + fmt.Sprintf("), %d out", completion)
}

// usageText is a task's tokens, calls and cost.
func usageText(u activities.Usage) string {
	return fmt.Sprintf("%s (%d calls, cost %s)", tokensText(u.PromptTokens, u.CachedTokens, u.CacheWriteTokens, u.CompletionTokens), u.Calls, costText(u))
}

// printModelUsage lists the tokens and cost of each model that answered.
func printModelUsage(w io.Writer, prefix string, u activities.Usage) {
	for _, m := range u.PerModel {
		fmt.Fprintf(w, "%s%s: %s (%d calls, cost %s)\n", prefix, termsafe.Line(m.Model),
			tokensText(m.PromptTokens, m.CachedTokens, m.CacheWriteTokens, m.CompletionTokens),
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
