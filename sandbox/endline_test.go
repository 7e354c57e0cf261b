package sandbox

import (
	"bytes"
	"testing"
)

// TestEndLines: the end lines are taken only at the very end of their
// streams, with the run's token, and never reach the output; a status is
// given only where the cgroup counted no memory kill.
func TestEndLines(t *testing.T) {
	const token = "0123456789abcdef"
	end := "\n" + endMarker + " " + token
	for _, c := range []struct {
		name           string
		stdout, stderr []string // the writes of each stream
		wantOut        string
		wantErr        string
		code           int
		ok             bool
	}{
		{name: "both", stdout: []string{"out\n", end + " 3 0\n"}, stderr: []string{"err\n" + end + "\n"},
			wantOut: "out\n", wantErr: "err\n", code: 3, ok: true},
		{name: "split across writes", stdout: []string{"o", end[:5], end[5:] + " 0", " 0", "\n"}, stderr: []string{end[:9], end[9:] + "\n"},
			wantOut: "o", code: 0, ok: true},
		{name: "memory kill", stdout: []string{end + " 137 1\n"}, stderr: []string{end + "\n"}},
		{name: "no cgroup counter", stdout: []string{end + " 0 -\n"}, stderr: []string{end + "\n"}},
		{name: "stderr missing", stdout: []string{"x" + end + " 0 0\n"}, stderr: []string{"e"}, wantOut: "x", wantErr: "e"},
		{name: "not last", stdout: []string{end + " 0 0\nmore\n"}, stderr: []string{end + "\n"},
			wantOut: end + " 0 0\nmore\n"},
		{name: "another token", stdout: []string{"\n" + endMarker + " ffffffffffffffff 0 0\n"}, stderr: []string{end + "\n"},
			wantOut: "\n" + endMarker + " ffffffffffffffff 0 0\n"},
		{name: "bad words", stdout: []string{end + " 0 0 0\n", end + " x 0\n"}, stderr: []string{end + " 1\n"},
			wantOut: end + " 0 0 0\n" + end + " x 0\n", wantErr: end + " 1\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out, errs bytes.Buffer
			e := newEndLines(token, &out, &errs)
			for _, w := range c.stdout {
				if _, err := e.stdout.Write([]byte(w)); err != nil {
					t.Fatal(err)
				}
			}
			for _, w := range c.stderr {
				if _, err := e.stderr.Write([]byte(w)); err != nil {
					t.Fatal(err)
				}
			}
			code, ok := e.status()
			if !ok {
				e.flush()
			}
			if out.String() != c.wantOut || errs.String() != c.wantErr {
				t.Errorf("output %q, %q; want %q, %q", out.String(), errs.String(), c.wantOut, c.wantErr)
			}
			if code != c.code || ok != c.ok {
				t.Errorf("status %d, %v; want %d, %v", code, ok, c.code, c.ok)
			}
		})
	}
}
