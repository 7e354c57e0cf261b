package portnum

func Parse(s string) (int, error) {
	return strconv.Atoi(s)
}
