package words

import "strings"

func Count(s string) int { return len(strings.Split(s, " ")) }
