package starter

import (
	"fmt"
	"strings"

	"github.com/autocoder/autocoder/activities"
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
