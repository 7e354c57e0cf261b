package spinwait

func Converge(x int) int {
	for x != 0 {
		x -= 2
	}
	return x
}
