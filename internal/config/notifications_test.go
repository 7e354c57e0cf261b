package config

import (
	"slices"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/notify"
)

// TestNotifications: [[notifications]] entries become targets, a url_env's
// variable read at use, the format by the URL's host when not written.
func TestNotifications(t *testing.T) {
	text := `model = "openai:gpt-4.1"

[[notifications]]
url = "https://hooks.slack.com/services/T/B/secret"

[[notifications]]
url_env = "TEAM_HOOK"
format = "json"
events = ["gate", "failed"]
`
	p := writeFile(t, t.TempDir(), "c.toml", text, 0o600)
	c, err := Load(Options{File: p, Getenv: envOf(map[string]string{"TEAM_HOOK": "http://127.0.0.1:9/hook"})})
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Notifications()
	if err != nil {
		t.Fatal(err)
	}
	want := []notify.Target{
		{URL: "https://hooks.slack.com/services/T/B/secret", Format: notify.FormatSlack},
		{URL: "http://127.0.0.1:9/hook", Format: notify.FormatJSON, Events: []notify.Event{notify.EventGate, notify.EventFailed}},
	}
	if len(got) != len(want) {
		t.Fatalf("Notifications = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i].URL != want[i].URL || got[i].Format != want[i].Format || !slices.Equal(got[i].Events, want[i].Events) {
			t.Errorf("target %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	fn := c.FileNotifications()
	if fn[0].Source.Line != 3 || fn[1].Source.Line != 6 {
		t.Errorf("entries at lines %d and %d, want 3 and 6", fn[0].Source.Line, fn[1].Source.Line)
	}
	if m := fn[0].Masked(); strings.Contains(m, "secret") || !strings.Contains(m, "hooks.slack.com") {
		t.Errorf("Masked = %q, want the host without the credential", m)
	}

	unset, err := Load(Options{File: p})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := unset.Notifications(); err == nil || !strings.Contains(err.Error(), "TEAM_HOOK") || !strings.Contains(err.Error(), p+":6") {
		t.Errorf("url_env unset: error %v, want one naming TEAM_HOOK and %s:6", err, p)
	}
}

func TestNotificationErrorsNameTheLine(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		line       int
		want       string
	}{
		{"unknown key", "[[notifications]]\nurl = \"http://h/x\"\nchannel = \"#dev\"\n", 3, `[[notifications]] channel: unknown key`},
		{"bad format", "[[notifications]]\nurl = \"http://h/x\"\n\nformat = \"teams\"\n", 4, `"teams" is not a format`},
		{"bad event", "[[notifications]]\nurl = \"http://h/x\"\n[[notifications]]\nurl = \"http://h/y\"\nevents = [\"gate\", \"done\"]\n", 5, `"done" is not an event`},
		{"events not a list", "[[notifications]]\nurl = \"http://h/x\"\nevents = \"gate\"\n", 3, "want a list"},
		{"no url", "[[notifications]]\nformat = \"slack\"\n", 1, "needs a url, or url_env"},
		{"both", "[[notifications]]\nurl = \"http://h/x\"\nurl_env = \"HOOK\"\n", 1, "(one of them)"},
		{"not a URL", "\n[[notifications]]\nurl = \"hooks.example/secret\"\n", 3, "not an http:// or https:// URL"},
		{"a table", "[notifications]\nurl = \"http://h/x\"\n", 1, "write each as a [[notifications]] table"},
		{"inline entry", "notifications = [{ url = \"http://h/x\", format = \"irc\" }]\n", 1, `"irc" is not a format`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeFile(t, t.TempDir(), "c.toml", tc.text, 0o600)
			_, err := Load(Options{File: p})
			if err == nil {
				t.Fatal("no error")
			}
			prefix := p + ":" + itoa(tc.line) + ":"
			if !strings.HasPrefix(err.Error(), prefix) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want %q… naming %q", err, prefix, tc.want)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("error repeats the URL: %v", err)
			}
		})
	}
}

// TestNotificationURLNeedsPrivateFile: a webhook URL is a credential.
func TestNotificationURLNeedsPrivateFile(t *testing.T) {
	dir := t.TempDir()
	p := writeFile(t, dir, "c.toml", "[[notifications]]\nurl = \"https://hooks.slack.com/services/T/B/secret\"\n", 0o644)
	if _, err := Load(Options{File: p}); err == nil || !strings.Contains(err.Error(), "chmod 600 "+p) || !strings.HasPrefix(err.Error(), p+":1:") {
		t.Fatalf("readable file with a webhook URL: error %v, want one naming chmod 600 and line 1", err)
	}
	q := writeFile(t, dir, "env.toml", "[[notifications]]\nurl_env = \"HOOK\"\n", 0o644)
	if _, err := Load(Options{File: q}); err != nil {
		t.Errorf("a URL named by variable in a readable file: %v", err)
	}
}
