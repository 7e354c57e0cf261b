package steps

func Diffs(xs []int) []int {
	out := make([]int, 0, len(xs))
	for i := range xs {
		out = append(out, xs[i+1]-xs[i])
	}
	return out
}
