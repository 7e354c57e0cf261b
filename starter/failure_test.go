package starter

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/autocoder/autocoder/internal/taskclient"
)

// TestFailureLine: a failed task is one line with its cause and where to
// look; the whole error comes with --verbose, and in --json's detail.
func TestFailureLine(t *testing.T) {
	fe := &taskclient.FailedError{Message: "model call: model provider openai failed (HTTP 503)"}
	for _, tc := range []struct {
		name          string
		verbose, json bool
		want          string
	}{
		{"plain", false, false, "task autocoder-1 failed: model call: model provider openai failed (HTTP 503); " +
			"autocoder status autocoder-1 shows where it stopped (the whole error: --verbose)"},
		{"verbose", true, false, "task autocoder-1 failed: model call: model provider openai failed (HTTP 503); " +
			"autocoder status autocoder-1 shows where it stopped\nthe whole error: " + fe.Error()},
		{"json", false, true, "task autocoder-1 failed: model call: model provider openai failed (HTTP 503); " +
			"autocoder status autocoder-1 shows where it stopped (the whole error: --verbose)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			f := NewFactory(config{}, IOStreams{Out: &out, ErrOut: &out})
			f.verbose = tc.verbose
			err := failed(f, "autocoder-1", tc.json, fe)
			if err.Error() != tc.want {
				t.Errorf("error:\n%s\nwant:\n%s", err, tc.want)
			}
			if exitCode(err, t.Context()) != exitTaskFailed || !errors.Is(err, fe) {
				t.Errorf("%v: exit %d, want %d", err, exitCode(err, t.Context()), exitTaskFailed)
			}
			var printed struct{ ID, Error, Detail string }
			if tc.json {
				if jerr := json.Unmarshal(out.Bytes(), &printed); jerr != nil || printed.Error != fe.Message || printed.Detail != fe.Error() {
					t.Errorf("--json printed %q (%v)", out.String(), jerr)
				}
			} else if out.Len() > 0 {
				t.Errorf("printed %q", out.String())
			}
		})
	}
}
