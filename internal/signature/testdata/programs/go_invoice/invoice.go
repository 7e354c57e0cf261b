package invoice

import "fmt"

func Total(cents int64) string {
	return fmt.Sprintf("total: %d.%02d EUR %s", cents/100, cents%100)
}
