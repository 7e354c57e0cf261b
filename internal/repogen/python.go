package repogen

import (
	"fmt"
	"path"
	"strings"
)

// A checked function is one whose value the tests assert: total(a, b) =
// a*k1 + b, less k3 when over k2.
type checked struct {
	module, name string
	k1, k2, k3   int
}

func (c checked) value(a, b int) int {
	t := a*c.k1 + b
	if t > c.k2 {
		t -= c.k3
	}
	return t
}

// The planted bug lives in this module, five levels down.
const (
	bugDir    = "acme/billing/rules/internal/pricing"
	bugModule = bugDir + "/discounts.py"
	bugTest   = "tests/billing/test_billing_discounts.py"
)

func (g *gen) python() {
	g.add("acme/__init__.py", "\"\"\"Acme order processing.\"\"\"\n")
	for _, area := range areaNames[:g.opts.Areas] {
		g.add(path.Join("acme", area, "__init__.py"), fmt.Sprintf("\"\"\"The %s area.\"\"\"\n", area))
		for _, sub := range subNames {
			dir := path.Join("acme", area, sub)
			g.add(dir+"/__init__.py", "")
			var tested []checked
			for m := range g.opts.ModulesPerPackage {
				module := fmt.Sprintf("%s_%s", nouns[(m*7+len(area))%len(nouns)], sub)
				if m >= len(nouns) {
					module += fmt.Sprint(m)
				}
				src, fns := g.pyModule(dir, module, g.opts.FunctionsPerFile)
				g.add(path.Join(dir, module+".py"), src)
				tested = append(tested, fns[:2]...)
			}
			g.add(fmt.Sprintf("tests/%s/test_%s_%s.py", area, area, sub), g.pyTests(tested))
		}
	}
	if g.opts.Areas > 0 { // billing is the first area
		g.plantBug()
	}
}

// pyModule writes one module of plain functions and a class; it returns
// the functions whose values a test may check.
func (g *gen) pyModule(dir, module string, functions int) (string, []checked) {
	var b strings.Builder
	pkg := strings.ReplaceAll(dir, "/", ".")
	fmt.Fprintf(&b, "\"\"\"%s: %s helpers for %s.\n\n%s\n\"\"\"\n\nimport math\n\n", module, strings.ReplaceAll(module, "_", " "), pkg, g.filler())
	limit := strings.ToUpper(module) + "_LIMIT"
	fmt.Fprintf(&b, "%s = %d\n\n", limit, 10+g.rng.IntN(90))
	var fns []checked
	for i := range functions {
		name := g.name()
		switch i % 3 {
		case 0:
			c := checked{module: pkg + "." + module, name: name, k1: 2 + g.rng.IntN(9), k2: 50 + g.rng.IntN(200), k3: 1 + g.rng.IntN(40)}
			fns = append(fns, c)
			fmt.Fprintf(&b, `

def %s(a, b):
    """Combine two counts into one %s total.

    %s
    """
    total = a * %d + b
    if total > %d:
        total -= %d
    return total
`, name, strings.ReplaceAll(name, "_", " "), g.filler(), c.k1, c.k2, c.k3)
		case 1:
			fmt.Fprintf(&b, `

def %s(values):
    """Map each value, halving multiples of %[2]d.

    %[3]s
    """
    result = []
    for v in values:
        if v %% %[2]d == 0:
            result.append(v // %[2]d)
        else:
            result.append(v + %[4]d)
    return result
`, name, 2+g.rng.IntN(5), g.filler(), g.rng.IntN(9))
		default:
			fmt.Fprintf(&b, `

def %s(text, limit=%s):
    """Split text on %[3]q and keep at most limit sorted parts.

    %[4]s
    """
    parts = [p.strip() for p in text.split(%[3]q) if p.strip()]
    return sorted(parts)[: max(0, min(limit, int(math.sqrt(len(parts) + 1) * 10)))]
`, name, limit, []string{",", ";", "|"}[g.rng.IntN(3)], g.filler())
		}
	}
	class := camel(g.name())
	fmt.Fprintf(&b, `

class %[1]s:
    """A bounded collection of %[2]s records.

    %[3]s
    """

    def __init__(self, limit=%[4]s):
        self.limit = limit
        self.items = []

    def add(self, item):
        if len(self.items) >= self.limit:
            raise ValueError("%[1]s is full")
        self.items.append(item)
        return len(self.items)

    def %[5]s(self, key):
        return [item for item in self.items if item == key]

    def __len__(self):
        return len(self.items)
`, class, strings.ReplaceAll(module, "_", " "), g.filler(), limit, g.name())
	return b.String(), fns
}

func (g *gen) pyTests(fns []checked) string {
	var b strings.Builder
	for _, c := range fns {
		fmt.Fprintf(&b, "from %s import %s\n", c.module, c.name)
	}
	for _, c := range fns {
		a, bb := 1+g.rng.IntN(40), g.rng.IntN(40)
		fmt.Fprintf(&b, "\n\ndef test_%s():\n    assert %s(%d, %d) == %d\n    assert %s(0, 0) == %d\n",
			c.name, c.name, a, bb, c.value(a, bb), c.name, c.value(0, 0))
	}
	return b.String()
}

// plantBug adds the module with the wrong discount, the packages above it
// and the one test that catches it. The module is larger than the others,
// so a prompt that prefers small files leaves it out.
func (g *gen) plantBug() {
	g.add("acme/billing/rules/internal/__init__.py", "")
	g.add(bugDir+"/__init__.py", "")
	src, _ := g.pyModule(bugDir, "discounts", g.opts.FunctionsPerFile*2)
	buggy := "return price_cents - price_cents * percent // 1000"
	fixed := "return price_cents - price_cents * percent // 100"
	body := `

def apply_discount(price_cents, percent):
    """Return the price after taking off percent per cent, rounded down."""
    if not 0 <= percent <= 100:
        raise ValueError("percent must be between 0 and 100")
    ` + buggy + "\n"
	// The function sits in the middle of the module, among the others.
	mid := strings.Index(src[len(src)/2:], "\n\n\ndef ") + len(src)/2
	src = src[:mid] + body + src[mid:]
	g.add(bugModule, src)
	g.add(bugTest, `from acme.billing.rules.internal.pricing.discounts import apply_discount


def test_apply_discount():
    assert apply_discount(1000, 15) == 850
    assert apply_discount(999, 0) == 999
    assert apply_discount(200, 100) == 0
`)
	g.bug = Bug{
		Path:    bugModule,
		Symbol:  "apply_discount",
		Line:    strings.Count(src[:strings.Index(src, buggy)], "\n") + 1,
		Buggy:   buggy,
		Fixed:   fixed,
		Test:    bugTest,
		Symptom: "Discounts are wrong: a 15% discount on 1000 cents gives 985 instead of 850.",
	}
}
