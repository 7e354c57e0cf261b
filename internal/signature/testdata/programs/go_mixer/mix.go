package mixer

func Blend(n int, f float64) float64 {
	return n + f
}
