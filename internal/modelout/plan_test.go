package modelout

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func TestParsePlan(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"dots", "Plan:\n1. Create app/main.py\n2. Add tests\n3. Run pytest\n",
			[]string{"Create app/main.py", "Add tests", "Run pytest"}},
		{"parens", "1) one\n2) two", []string{"one", "two"}},
		{"step form", "Step 1: Set up\nStep 2 - Write code\nstep 3. Test", []string{"Set up", "Write code", "Test"}},
		{"markdown", "## Plan\n\n1. **Create** the module\n2. `go test ./...`\n**3.** Ship it\n",
			[]string{"Create the module", "`go test ./...`", "Ship it"}},
		{"bold items", "**1. Parse input**\n**2. Print output**", []string{"Parse input", "Print output"}},
		{"step headings with body on next line", "### Step 1\nCreate the file.\n\n### Step 2:\n\nTest it.\n",
			[]string{"Create the file.", "Test it."}},
		{"bold step headings", "**Step 1:** Write\n**Step 2:** Run", []string{"Write", "Run"}},
		{"step lines win over sub-lists", "Step 1: Build\n  1. compile\n  2. link\nStep 2: Test",
			[]string{"Build", "Test"}},
		{"nested list keeps outer items", "1. Build\n   1. compile\n   2. link\n2. Test\n",
			[]string{"Build", "Test"}},
		{"code blocks ignored", "1. Write\n```\n2. not a step\n```\n2. Run\n", []string{"Write", "Run"}},
		{"crlf", "1. a\r\n2. b\r\n", []string{"a", "b"}},
		{"decimal is not a step", "Use version 1.5 of the API\n1. Upgrade", []string{"Upgrade"}},
		{"whitespace collapsed", "1.   Create   the\tfile  ", []string{"Create the file"}},
		{"packages line is not a step", "1. Write greet\n2. Test it\n\nPackages: greetlib, requests\n",
			[]string{"Write greet", "Test it"}},
		{"packages line is not a heading's body", "### Step 1\nWrite greet.\n\n### Step 2\n\nPackages: greetlib\n",
			[]string{"Write greet."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParsePlan(tt.in)
			if err != nil {
				t.Fatalf("ParsePlan: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestParsePlanCapsSteps(t *testing.T) {
	var b strings.Builder
	for i := 1; i <= 20; i++ {
		fmt.Fprintf(&b, "%d. step %d\n", i, i)
	}
	got, err := ParsePlan(b.String())
	if err != nil || len(got) != MaxPlanSteps || got[11] != "step 12" {
		t.Fatalf("got %d steps (%v), want the first %d", len(got), err, MaxPlanSteps)
	}
}

func TestParsePlanNoSteps(t *testing.T) {
	for _, in := range []string{"", "I will write the code now.", "```\n1. inside code\n```", "1.\n2.  \n", "- a\n- b"} {
		if _, err := ParsePlan(in); !errors.Is(err, ErrNoPlan) {
			t.Errorf("ParsePlan(%q) error = %v, want ErrNoPlan", in, err)
		}
	}
}

func FuzzParsePlan(f *testing.F) {
	for _, s := range []string{
		"1. a\n2. b", "Step 1: x\nStep 2: y", "### Step 1\nbody", "```\n1. x\n```", "**1.** a",
		"1)  \n2) b", "Step 99999: x", "\n\n1. \x00", "~~~\n1. a",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		steps, err := ParsePlan(in)
		if (err != nil) != (len(steps) == 0) {
			t.Fatalf("err %v with %d steps", err, len(steps))
		}
		if len(steps) > MaxPlanSteps {
			t.Fatalf("%d steps, over the cap", len(steps))
		}
		for _, s := range steps {
			if s == "" || strings.ContainsAny(s, "\n\r") || s != strings.TrimSpace(s) {
				t.Fatalf("bad step %q", s)
			}
		}
	})
}

func TestParsePackages(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string
	}{
		{"none", "1. Write it\n2. Test it\n", nil},
		{"commas", "1. Write it\nPackages: greetlib, requests", []string{"greetlib", "requests"}},
		{"markdown and repeats", "1. a\n**Packages:** `golang.org/x/text`, golang.org/x/text, @scope/pkg.", []string{"golang.org/x/text", "@scope/pkg"}},
		{"says none", "1. a\nPackages: none", nil},
		{"the last line wins", "Packages: old\n1. a\nPackages: new", []string{"new"}},
		{"code blocks ignored", "1. a\n```\nPackages: quoted\n```\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ParsePackages(tt.in); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
