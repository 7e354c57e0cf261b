package starter

import (
	"context"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/notify"
)

// TestRunNotify: --notify targets are kept in the store with the task's
// Web UI link, and the task carries only their key; run names each by its
// format and host, and a bad one is a usage error that does not repeat it.
func TestRunNotify(t *testing.T) {
	c := newFakeClient()
	f, out, errOut := fakeFactory(t, c)
	code := execute(context.Background(), f, []string{"run", "--detach", "--notify", "slack:http://127.0.0.1:9/hook/s3cr3t",
		"--notify", "https://discord.com/api/webhooks/1/s3cr3t", "fix it"})
	if code != exitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	if !strings.Contains(errOut.String(), "notifications: slack webhook at 127.0.0.1:9; discord webhook at discord.com") {
		t.Errorf("run does not name the webhooks:\n%s", errOut)
	}
	if strings.Contains(out.String()+errOut.String(), "s3cr3t") {
		t.Errorf("run prints a webhook URL:\n%s%s", out, errOut)
	}
	ref := c.started[0].Notify
	if !strings.HasPrefix(ref, "notify/") || strings.Contains(ref, "s3cr3t") {
		t.Fatalf("task input's Notify = %q, want a store key", ref)
	}
	st, err := f.Store(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	rec, err := notify.Load(context.Background(), st, ref)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Targets) != 2 || rec.Targets[0].URL != "http://127.0.0.1:9/hook/s3cr3t" || rec.Targets[0].Format != notify.FormatSlack ||
		rec.Targets[1].Format != notify.FormatDiscord || !strings.HasPrefix(rec.Link, "http://ui/namespaces/default/workflows/autocoder-fix-it-") {
		t.Errorf("stored record %+v", rec)
	}

	r := runFake(t, c, "run", "--detach", "--notify", "teams:https://example.com/s3cr3t", "fix it")
	r.want(t, exitUsage, nil, []string{"--notify: not an http:// or https:// URL"})
	if strings.Contains(r.errOut, "s3cr3t") {
		t.Errorf("the usage error repeats the URL: %s", r.errOut)
	}
}
