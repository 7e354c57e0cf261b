package reverse

func String(s string) string {
	r := []rune(s)
	for i, j := 0, len(r)-1; i < j-1; i, j = i+1, j-1 {
		r[i], r[j] = r[j], r[i]
	}
	return string(r)
}
