package policy

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestParseAllow(t *testing.T) {
	tests := []struct {
		in         string
		wantDenied []string
		wantErr    error
	}{
		{"", []string{Process, Network, Dynamic, Native, AbsWrite, Credentials}, nil},
		{"network,process", []string{Dynamic, Native, AbsWrite, Credentials}, nil},
		{" network , ,network,abs-write ", []string{Process, Dynamic, Native, Credentials}, nil},
		{"process,network,dynamic,native,abs-write,credentials", []string{}, nil},
		{"network,sockets", nil, ErrUnknownCategory},
		{"Network", nil, ErrUnknownCategory},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			r, err := ParseAllow(tt.in)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("ParseAllow(%q) error = %v, want %v", tt.in, err, tt.wantErr)
			}
			if err != nil {
				if !strings.Contains(err.Error(), "abs-write") {
					t.Errorf("error %q does not list the known categories", err)
				}
				return
			}
			if got := r.Denied(); !slices.Equal(got, tt.wantDenied) {
				t.Errorf("Denied() = %v, want %v", got, tt.wantDenied)
			}
		})
	}
}

func TestAllowLeavesReceiverUnchanged(t *testing.T) {
	base, err := DefaultRules().Allow(Network)
	if err != nil {
		t.Fatal(err)
	}
	more, err := base.Allow(Process)
	if err != nil {
		t.Fatal(err)
	}
	if !base.Denies(Process) || base.Denies(Network) {
		t.Errorf("base changed: %+v", base)
	}
	if more.Denies(Process) || more.Denies(Network) || !more.Denies(Native) {
		t.Errorf("more = %+v, want network and process allowed", more)
	}
	if _, err := base.Allow("disk"); !errors.Is(err, ErrUnknownCategory) {
		t.Errorf("Allow(disk) error = %v, want ErrUnknownCategory", err)
	}
	var zero Rules
	for _, c := range Categories() {
		if !zero.Denies(c) {
			t.Errorf("zero Rules allows %s", c)
		}
	}
}

func TestFindingString(t *testing.T) {
	f := Finding{File: "a/b.go", Line: 7, Rule: Process, Message: `import "os/exec" spawns processes`}
	if got, want := f.String(), `a/b.go:7: [process] import "os/exec" spawns processes`; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

func TestSummary(t *testing.T) {
	many := make([]Finding, summaryCap+3)
	for i := range many {
		many[i] = Finding{File: "f.py", Line: i + 1, Rule: Dynamic, Message: "uses eval"}
	}
	tests := []struct {
		name      string
		in        []Finding
		wantLines int
		contains  []string
		absent    []string
	}{
		{"none", nil, 0, nil, nil},
		{"one", many[:1], 2, []string{"1 policy finding(s)", "f.py:1: [dynamic] uses eval"}, []string{"more"}},
		{"capped", many, summaryCap + 2, []string{"43 policy finding(s)", fmt.Sprintf("f.py:%d:", summaryCap), "... and 3 more"}, []string{fmt.Sprintf("f.py:%d:", summaryCap+1)}},
		{"control characters", []Finding{{File: "a\nb.py", Line: 1, Rule: RuleSyntax, Message: "bad\ttoken"}}, 2, []string{"a b.py:1: [syntax] bad token"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Summary(tt.in)
			if n := strings.Count(got, "\n"); n != tt.wantLines {
				t.Errorf("Summary has %d lines, want %d:\n%s", n, tt.wantLines, got)
			}
			for _, s := range tt.contains {
				if !strings.Contains(got, s) {
					t.Errorf("Summary lacks %q:\n%s", s, got)
				}
			}
			for _, s := range tt.absent {
				if strings.Contains(got, s) {
					t.Errorf("Summary has %q:\n%s", s, got)
				}
			}
		})
	}
}
