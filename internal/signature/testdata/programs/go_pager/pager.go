package pager

func Page(items []string, size, n int) []string {
	start := n * size
	return items[start : start+size]
}
