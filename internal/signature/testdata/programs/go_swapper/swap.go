package swapper

func Swap(a, b int) (int, int) {
	var tmp int
	a, b = b, a
	return a, b
}
