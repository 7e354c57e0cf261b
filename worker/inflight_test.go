package worker

import (
	"context"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/autocoder/autocoder/internal/owner"
)

// completer answers CompleteActivity per token; the rest of client.Client
// is not used by failOrphans.
type completer struct {
	client.Client
	answers map[string]error
	failed  []string
}

func (c *completer) CompleteActivity(_ context.Context, token []byte, _ any, err error) error {
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.Type() != ErrTypeWorkerLost {
		return errors.New("not failed as WorkerLost")
	}
	c.failed = append(c.failed, string(token))
	return c.answers[string(token)]
}

func TestFailOrphans(t *testing.T) {
	base := t.TempDir()
	host, _ := os.Hostname()
	write := func(ownerID string, tokens ...string) string {
		dir := filepath.Join(base, url.PathEscape(ownerID))
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		for _, tok := range tokens {
			if err := os.WriteFile(filepath.Join(dir, tok), []byte(tok), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	dead := write(host+"/999999999/1", "running", "finished", "garbled", "unreachable")
	live := write(owner.ID(), "mine")
	foreign := write("other-host/1/1", "theirs")

	c := &completer{answers: map[string]error{
		"finished":    serviceerror.NewNotFound("activity task not found"),
		"garbled":     serviceerror.NewInvalidArgument("invalid task token"),
		"unreachable": serviceerror.NewUnavailable("frontend down"),
	}}
	n, err := failOrphans(context.Background(), c, base)
	if n != 1 {
		t.Errorf("failed %d activities, want 1", n)
	}
	if err == nil {
		t.Error("want the unreachable activity's error")
	}
	slices.Sort(c.failed)
	if want := []string{"finished", "garbled", "running", "unreachable"}; !slices.Equal(c.failed, want) {
		t.Errorf("tried to fail %v, want %v", c.failed, want)
	}
	if left := names(t, dead); !slices.Equal(left, []string{"unreachable"}) {
		t.Errorf("dead worker's records left: %v, want only the one to try again", left)
	}
	for _, dir := range []string{live, foreign} {
		if left := names(t, dir); len(left) != 1 {
			t.Errorf("%s: records %v, want them untouched", dir, left)
		}
	}

	c.answers["unreachable"] = nil
	if n, err := failOrphans(context.Background(), c, base); n != 1 || err != nil {
		t.Errorf("second pass = %d, %v; want 1, nil", n, err)
	}
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("dead worker's folder still there: %v", err)
	}
	if n, err := failOrphans(context.Background(), c, filepath.Join(base, "none")); n != 0 || err != nil {
		t.Errorf("no records = %d, %v; want 0, nil", n, err)
	}
}

func TestRecordInFlight(t *testing.T) {
	base := t.TempDir()
	f := newInFlight(&completer{}, base)
	f.start()
	done := f.record([]byte("token"))
	if left := names(t, f.dir); len(left) != 1 {
		t.Fatalf("records while running: %v, want one", left)
	}
	done()
	if left := names(t, f.dir); len(left) != 0 {
		t.Fatalf("records after: %v, want none", left)
	}

	// A data dir where nothing can be written: the worker runs on, unrecorded.
	blocked := filepath.Join(base, "file")
	if err := os.WriteFile(blocked, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	g := newInFlight(&completer{}, blocked)
	g.start()
	g.record([]byte("token"))()
	if g.dir != "" {
		t.Fatalf("records kept in %s under a file", g.dir)
	}
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}
