// Package truncate cuts strings to a byte budget without splitting a UTF-8
// sequence, so what is kept stays valid text for people, prompts and
// databases.
package truncate

import "unicode/utf8"

// Head returns the longest prefix of s of at most n bytes that ends on a
// rune boundary.
func Head(s string, n int) string {
	if len(s) <= n {
		return s
	}
	n = max(n, 0)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Tail returns the longest suffix of s of at most n bytes that starts on a
// rune boundary.
func Tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := len(s) - max(n, 0)
	for cut < len(s) && !utf8.RuneStart(s[cut]) {
		cut++
	}
	return s[cut:]
}

// Quote returns Head(s, n) with "…" after it when s was cut: a person's
// or a model's text quoted in a message, whose length it cannot choose.
func Quote(s string, n int) string {
	if head := Head(s, n); len(head) < len(s) {
		return head + "…"
	}
	return s
}
