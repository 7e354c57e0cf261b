package versions

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// scheme is how an ecosystem marks a pre-release.
type scheme func(v string) bool

// semverPre: SemVer's hyphen after the core (Go modules, npm, Cargo).
func semverPre(v string) bool {
	v, _, _ = strings.Cut(v, "+")
	return strings.Contains(v, "-")
}

// pep440Pre: PEP 440's alpha, beta, candidate and development releases.
var pep440Pre = regexp.MustCompile(`\d[._-]?(a|b|c|rc|alpha|beta|pre|preview|dev)(\d|[._-]|$)`).MatchString

func pythonPre(v string) bool {
	v, _, _ = strings.Cut(strings.ToLower(v), "+")
	return pep440Pre(v)
}

// mavenPre: the qualifiers Maven orders before a release, and snapshots.
var mavenQualifier = regexp.MustCompile(`(^|[._-])(alpha|beta|milestone|rc|cr|snapshot|preview|ea|dev|m|a|b)[._-]?\d*([._-]|$)`).MatchString

func mavenPre(v string) bool { return mavenQualifier(strings.ToLower(v)) }

// newest is the highest of vs, a release if there is one; "" for none.
func newest(vs []string, pre scheme) string {
	best, bestPre := "", true
	for _, v := range vs {
		p := pre(v)
		switch {
		case best == "", bestPre && !p:
			best, bestPre = v, p
		case p == bestPre && compare(v, best, pre) > 0:
			best = v
		}
	}
	return best
}

// compare orders two versions: by their dotted numbers, then a release
// after its pre-releases, then the rest of each in natural order (numbers
// as numbers), where more comes later (1.0.post1 after 1.0).
func compare(a, b string, pre scheme) int {
	na, ra := core(a)
	nb, rb := core(b)
	for i := 0; i < max(len(na), len(nb)); i++ {
		x, y := at(na, i), at(nb, i)
		if x != y {
			return cmpInt(x, y)
		}
	}
	if pa, pb := pre(a), pre(b); pa != pb {
		if pa {
			return -1
		}
		return 1
	}
	return natural(ra, rb)
}

// core splits "v1.2.3-rc.1" into [1 2 3] and "-rc.1".
func core(v string) ([]int, string) {
	v = strings.TrimPrefix(strings.TrimPrefix(v, "v"), "V")
	var nums []int
	for {
		i := 0
		for i < len(v) && v[i] >= '0' && v[i] <= '9' {
			i++
		}
		if i == 0 {
			return nums, v
		}
		n, _ := strconv.Atoi(v[:i])
		nums = append(nums, n)
		v = v[i:]
		if len(v) < 2 || v[0] != '.' || v[1] < '0' || v[1] > '9' {
			return nums, v
		}
		v = v[1:]
	}
}

func at(nums []int, i int) int {
	if i < len(nums) {
		return nums[i]
	}
	return 0
}

func cmpInt(x, y int) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

// natural compares runs of digits as numbers and the rest as text.
func natural(a, b string) int {
	for a != "" && b != "" {
		ra, rest1 := run(a)
		rb, rest2 := run(b)
		if c := compareRun(ra, rb); c != 0 {
			return c
		}
		a, b = rest1, rest2
	}
	return cmpInt(len(a), len(b))
}

func run(s string) (string, string) {
	digit := s[0] >= '0' && s[0] <= '9'
	i := 1
	for i < len(s) && (s[i] >= '0' && s[i] <= '9') == digit {
		i++
	}
	return s[:i], s[i:]
}

func compareRun(a, b string) int {
	x, errA := strconv.Atoi(a)
	y, errB := strconv.Atoi(b)
	if errA == nil && errB == nil {
		return cmpInt(x, y)
	}
	return strings.Compare(a, b)
}

// pick answers the registry base's newest of vs, or why there is none.
func pick(base, name string, vs []string, pre scheme) (string, string, error) {
	if v := newest(vs, pre); v != "" {
		return base, v, nil
	}
	return base, "", fmt.Errorf("%s has no version that is not yanked", name)
}
