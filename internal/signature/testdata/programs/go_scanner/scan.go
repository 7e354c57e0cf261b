package scanner

func CountVowels(s string) int {
	n := 0
	for i, r := range s {
		switch r {
		case 'a', 'e', 'i', 'o', 'u':
			n++
		}
	}
	return n
}
