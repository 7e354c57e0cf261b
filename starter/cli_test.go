package starter

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/server/temporaltest"
)

// runCLI runs one command line the way main does, with captured streams.
func runCLI(t *testing.T, cfg config, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out, errOut bytes.Buffer
	f := NewFactory(cfg, IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	defer f.Close()
	code = execute(ctx, f, args)
	return code, out.String(), errOut.String()
}

// unreachable points at no server: commands that must fail before they
// dial fail with a usage error, not exit 3.
func unreachable(t *testing.T) config {
	return config{TemporalAddress: "127.0.0.1:1", Namespace: "default", DataDir: t.TempDir(), addressSet: true, UIURL: "http://127.0.0.1:1"}
}

func TestBadNumbersAreUsageErrors(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"budget NaN", []string{"run", "--budget-usd", "nan", "task"}, "--budget-usd NaN"},
		{"budget +Inf", []string{"run", "--budget-usd", "inf", "task"}, "--budget-usd +Inf"},
		{"budget -Inf", []string{"run", "--budget-usd=-Inf", "task"}, "--budget-usd -Inf"},
		{"budget negative", []string{"run", "--budget-usd=-1", "task"}, "--budget-usd -1"},
		{"tokens negative", []string{"run", "--budget-tokens=-5", "task"}, "--budget-tokens"},
		{"budget not a number", []string{"run", "--budget-usd", "lots", "task"}, "invalid argument"},
		{"rollback to 0", []string{"rollback", "autocoder-x", "--to", "0"}, "--to 0: checkpoints are numbered from 1"},
		{"rollback to negative", []string{"rollback", "autocoder-x", "--to=-3"}, "--to -3"},
		{"rollback without --to", []string{"rollback", "autocoder-x"}, `"to" not set`},
		{"list limit 0", []string{"list", "--limit", "0"}, "--limit 0"},
		{"lessons limit negative", []string{"lessons", "list", "--limit=-1"}, "--limit -1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, unreachable(t), tt.args...)
			if code != exitUsage || !strings.Contains(stderr, tt.wantErr) {
				t.Errorf("exit %d, stderr:\n%s\nwant exit %d and %q", code, stderr, exitUsage, tt.wantErr)
			}
		})
	}
}

// TestUnknownIDsAreNotFound runs every command that takes a task or
// lesson id against a real Temporal server that has never heard of it.
func TestUnknownIDsAreNotFound(t *testing.T) {
	ts := temporaltest.NewServer(temporaltest.WithT(t))
	cfg := config{TemporalAddress: ts.GetFrontendHostPort(), Namespace: ts.GetDefaultNamespace(),
		DataDir: t.TempDir(), addressSet: true, UIURL: "http://127.0.0.1:1"}
	const id = "autocoder-nosuchtask"
	tests := []struct {
		name string
		args []string
	}{
		{"status", []string{"status", id}},
		{"status json", []string{"status", id, "--json"}},
		{"watch", []string{"watch", id}},
		{"resume", []string{"resume", id}},
		{"approve", []string{"approve", id}},
		{"reject", []string{"reject", id, "--reason", "no"}},
		{"feedback", []string{"feedback", id, "more tests"}},
		{"cancel", []string{"cancel", id}},
		{"cancel force", []string{"cancel", id, "--force"}},
		{"rollback", []string{"rollback", id, "--to", "1"}},
		{"export", []string{"export", id, t.TempDir()}},
		{"export transcript", []string{"export", id, "--transcript", filepath.Join(t.TempDir(), "t.json")}},
		{"transcript", []string{"transcript", id}},
		{"transcript json", []string{"transcript", id, "--json"}},
		{"lessons show", []string{"lessons", "show", "0123456789ab"}},
		{"lessons forget", []string{"lessons", "forget", "0123456789ab"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := tt.args
			code, stdout, stderr := runCLI(t, cfg, args...)
			if code != exitNotFound {
				t.Errorf("autocoder %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, exitNotFound, stdout, stderr)
			}
			if !strings.Contains(stderr, "no task autocoder-nosuchtask here") && !strings.Contains(stderr, "no lesson 0123456789ab") {
				t.Errorf("autocoder %s: stderr does not say what was not found:\n%s", strings.Join(args, " "), stderr)
			}
		})
	}
}
