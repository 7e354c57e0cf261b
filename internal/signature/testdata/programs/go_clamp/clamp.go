package clamp

func Clamp(v, lo, hi int) int {
	if v < lo {
		return lo
	}
	if v >= hi {
		return hi - 1
	}
	return v
}
