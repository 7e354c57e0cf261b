package hits

type Counter struct {
	seen map[string]int
}

func (c *Counter) Hit(path string) int {
	c.seen[path]++
	return c.seen[path]
}
