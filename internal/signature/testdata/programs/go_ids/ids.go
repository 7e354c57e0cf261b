package ids

func Key(prefix string, id int) string {
	return prefix + id
}
