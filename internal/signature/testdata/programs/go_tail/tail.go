package tail

func Last(lines []string) string {
	return lines[len(lines)]
}
