// Package bytesize reads and writes amounts of bytes the way people write
// them in settings and read them in messages: 64MiB, 512 KiB, 1048576.
package bytesize

import (
	"fmt"
	"strconv"
	"strings"
)

var units = []struct {
	suffix string
	size   int64
}{
	{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10},
	{"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}, {"kB", 1e3},
	{"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}, {"k", 1 << 10},
	{"B", 1}, {"", 1},
}

// Parse reads a non-negative whole number of bytes with an optional unit:
// KiB, MiB, GiB (also K, M, G), KB, MB, GB or B.
func Parse(s string) (int64, error) {
	t := strings.TrimSpace(s)
	for _, u := range units {
		num, ok := strings.CutSuffix(t, u.suffix)
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(num), 10, 64)
		if err != nil || n < 0 || n > (1<<62)/u.size {
			break
		}
		return n * u.size, nil
	}
	return 0, fmt.Errorf("%q is not a size: write a whole number of bytes, optionally with KiB, MiB or GiB", s)
}

// Format writes n in the largest binary unit that keeps one decimal
// meaningful: 64 MiB, 1.5 GiB, 900 B.
func Format(n int64) string {
	for _, u := range []struct {
		name string
		size int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.size {
			v := float64(n) / float64(u.size)
			if n%u.size == 0 || v >= 100 {
				return fmt.Sprintf("%.0f %s", v, u.name)
			}
			return fmt.Sprintf("%.1f %s", v, u.name)
		}
	}
	return fmt.Sprintf("%d B", n)
}
