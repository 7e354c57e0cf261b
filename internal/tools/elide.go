package tools

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Elide bounds text to max bytes by keeping its head and tail and putting a
// marker saying how much was left out in between. Cuts fall on line
// boundaries where one is near, and never inside a UTF-8 sequence. The
// result is at most max bytes whenever max leaves room for the marker.
func Elide(text string, max int) string {
	if len(text) <= max {
		return text
	}
	// The marker's length depends on the count it shows; the count is at
	// most len(text), so size the marker for that.
	room := max - len(marker(len(text)))
	if room < 2 {
		return text[:cutBack(text, max)]
	}
	head := cutBack(text, room/2)
	if nl := strings.LastIndexByte(text[:head], '\n'); nl >= head*3/4 {
		head = nl + 1
	}
	tailStart := cutForward(text, len(text)-(room-head))
	if nl := strings.IndexByte(text[tailStart:], '\n'); nl >= 0 && nl < (len(text)-tailStart)/4 {
		tailStart += nl + 1
	}
	return text[:head] + marker(tailStart-head) + text[tailStart:]
}

func marker(n int) string {
	return fmt.Sprintf("\n[… %d bytes elided …]\n", n)
}

// cutBack moves i back to the start of a UTF-8 sequence.
func cutBack(s string, i int) int {
	for i > 0 && i < len(s) && !utf8.RuneStart(s[i]) {
		i--
	}
	return i
}

// cutForward moves i forward to the start of a UTF-8 sequence.
func cutForward(s string, i int) int {
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return i
}
