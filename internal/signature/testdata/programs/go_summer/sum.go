package summer

func Sum(xs []int) int {
	total := 0
	s := 0
	for _, x := range xs {
		s += x
	}
	return s
}
