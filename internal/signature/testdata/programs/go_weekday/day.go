package weekday

func Name(d int) string {
	switch d {
	case 0:
		return "sunday"
	case 1:
		return "monday"
	}
}
