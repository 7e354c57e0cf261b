package logline

import "fmt"

func Line(user string, n int) string {
	return fmt.Sprintf("%s made %s requests", user, n)
}
