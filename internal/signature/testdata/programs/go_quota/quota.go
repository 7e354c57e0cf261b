package quota

type Limits struct{ Max int64 }

func Allowed(used int, l Limits) bool {
	return used < l.Max
}
