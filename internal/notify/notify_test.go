package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/store"
)

var update = flag.Bool("update", false, "rewrite the golden bodies in testdata/")

const testLink = "http://127.0.0.1:8233/namespaces/default/workflows/t-1?a=1&b=2"

// TestBodies compares each format's body with its golden file, which a
// person has read: text is escaped for its format, mentions do not ping,
// quoted text cannot close its code block. Rewrite them with -update.
func TestBodies(t *testing.T) {
	for _, m := range []Message{gateMessage(), endMessage()} {
		for _, f := range Formats {
			name := string(m.Event) + "_" + string(f) + ".json"
			t.Run(name, func(t *testing.T) {
				body, err := Body(f, m, testLink)
				if err != nil {
					t.Fatal(err)
				}
				var got bytes.Buffer
				if err := json.Indent(&got, body, "", "  "); err != nil {
					t.Fatal(err)
				}
				got.WriteByte('\n')
				path := filepath.Join("testdata", name)
				if *update {
					if err := os.WriteFile(path, got.Bytes(), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				if got.String() != string(want) {
					t.Errorf("body differs from %s:\n%s", path, got.String())
				}
			})
		}
	}
}

// TestEscaping states the golden files' main points on their own.
func TestEscaping(t *testing.T) {
	m := gateMessage()
	slack, _ := Body(FormatSlack, m, testLink)
	var s slackMessage
	if err := json.Unmarshal(slack, &s); err != nil {
		t.Fatal(err)
	}
	for _, b := range s.Blocks {
		texts := b.Elements
		if b.Text != nil {
			texts = append(texts, *b.Text)
		}
		for _, tx := range texts {
			if strings.Contains(tx.Text, "<!channel>") || strings.Contains(tx.Text, "<@123>") || strings.Contains(tx.Text, "<b>") {
				t.Errorf("slack text keeps a control sequence: %q", tx.Text)
			}
			if strings.Count(tx.Text, "```") > 2 {
				t.Errorf("quoted text closes the code block: %q", tx.Text)
			}
		}
	}
	discord, _ := Body(FormatDiscord, m, testLink)
	var d map[string]any
	if err := json.Unmarshal(discord, &d); err != nil {
		t.Fatal(err)
	}
	if am, ok := d["allowed_mentions"].(map[string]any); !ok || len(am["parse"].([]any)) != 0 {
		t.Errorf("discord allowed_mentions = %v, want parse: []", d["allowed_mentions"])
	}
	content := d["content"].(string)
	for _, bad := range []string{" @everyone", "[click](", "<!channel>"} {
		if strings.Contains(content, bad) {
			t.Errorf("discord content keeps %q unescaped:\n%s", bad, content)
		}
	}
	if strings.Count(content, "```") != 2 {
		t.Errorf("quoted text closes the code block:\n%s", content)
	}
}

func TestDiscordContentBound(t *testing.T) {
	m := gateMessage()
	m.Question = strings.Repeat("why? ", 1000)
	body, _ := Body(FormatDiscord, m, testLink)
	var d discordMessage
	if err := json.Unmarshal(body, &d); err != nil {
		t.Fatal(err)
	}
	if n := len([]rune(d.Content)); n > maxDiscordContent {
		t.Errorf("content has %d characters, Discord takes %d", n, maxDiscordContent)
	}
}

// TestSlackSectionBound: quoted text made of characters Slack needs
// escaped stays within a section's 3000 characters, no entity cut.
func TestSlackSectionBound(t *testing.T) {
	m := endMessage()
	m.Result = strings.Repeat("&", 2000)
	body, _ := Body(FormatSlack, m, testLink)
	var s slackMessage
	if err := json.Unmarshal(body, &s); err != nil {
		t.Fatal(err)
	}
	for _, b := range s.Blocks {
		if b.Text == nil {
			continue
		}
		text := b.Text.Text
		if n := len([]rune(text)); n > 3000 {
			t.Errorf("section of %d characters, Slack takes 3000", n)
		}
		if strings.HasPrefix(text, "```") && !strings.HasSuffix(text, "&amp;…\n```") {
			t.Errorf("clipped section ends %q", text[max(0, len(text)-20):])
		}
	}
}

func TestParseFlag(t *testing.T) {
	for _, c := range []struct {
		in     string
		url    string
		format Format
		bad    bool
	}{
		{in: "http://127.0.0.1:9/hook", url: "http://127.0.0.1:9/hook", format: FormatJSON},
		{in: "slack:http://127.0.0.1:9/hook", url: "http://127.0.0.1:9/hook", format: FormatSlack},
		{in: "discord:https://example.com/x", url: "https://example.com/x", format: FormatDiscord},
		{in: "https://hooks.slack.com/services/T/B/secret", url: "https://hooks.slack.com/services/T/B/secret", format: FormatSlack},
		{in: "https://discord.com/api/webhooks/1/secret", url: "https://discord.com/api/webhooks/1/secret", format: FormatDiscord},
		{in: "json:https://hooks.slack.com/services/T/B/secret", url: "https://hooks.slack.com/services/T/B/secret", format: FormatJSON},
		{in: "teams:https://example.com/x", bad: true},
		{in: "ftp://example.com/x", bad: true},
		{in: "example.com/x", bad: true},
	} {
		got, err := ParseFlag(c.in)
		if c.bad {
			if err == nil {
				t.Errorf("ParseFlag(%q) = %+v, want an error", c.in, got)
			} else if strings.Contains(err.Error(), "example.com") {
				t.Errorf("ParseFlag(%q) error repeats the URL: %v", c.in, err)
			}
			continue
		}
		if err != nil || got.URL != c.url || got.Format != c.format {
			t.Errorf("ParseFlag(%q) = %+v, %v; want %s as %s", c.in, got, err, c.url, c.format)
		}
	}
}

func TestWants(t *testing.T) {
	all := Target{}
	some := Target{Events: []Event{EventGate}}
	if !all.Wants(EventFailed) || !some.Wants(EventGate) || some.Wants(EventSucceeded) {
		t.Error("Wants: an empty list wants all, a list only its events")
	}
}

// TestPost delivers to a real local receiver and classifies its answers.
func TestPost(t *testing.T) {
	const secret = "/hook/T0/B0/s3cr3t"
	for _, c := range []struct {
		name       string
		status     int
		header     http.Header
		permanent  bool
		retryAfter time.Duration
	}{
		{name: "ok", status: 200},
		{name: "no content", status: 204},
		{name: "server error", status: 500},
		{name: "bad gateway", status: 502},
		{name: "too many", status: 429, header: http.Header{"Retry-After": {"7"}}, retryAfter: 7 * time.Second},
		{name: "bad request", status: 400, permanent: true},
		{name: "gone", status: 404, permanent: true},
		{name: "redirect", status: 302, header: http.Header{"Location": {"http://127.0.0.1:1/elsewhere"}}, permanent: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got []byte
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodPost || r.URL.Path != secret || r.Header.Get("Content-Type") != "application/json" {
					t.Errorf("request %s %s %s", r.Method, r.URL.Path, r.Header.Get("Content-Type"))
				}
				got = readAll(r)
				for k, v := range c.header {
					w.Header()[k] = v
				}
				w.WriteHeader(c.status)
				w.Write([]byte("invalid_payload"))
			}))
			defer srv.Close()
			err := Post(context.Background(), NewClient(time.Second), Target{URL: srv.URL + secret, Format: FormatJSON}, []byte(`{"x":1}`))
			if string(got) != `{"x":1}` {
				t.Errorf("receiver got %q", got)
			}
			if c.status < 300 {
				if err != nil {
					t.Fatalf("Post = %v, want success", err)
				}
				return
			}
			var de *DeliveryError
			if !errors.As(err, &de) {
				t.Fatalf("Post = %v, want a DeliveryError", err)
			}
			if de.Status != c.status || de.Permanent != c.permanent || de.RetryAfter != c.retryAfter {
				t.Errorf("Post = %+v, want status %d, permanent %v, retry after %s", de, c.status, c.permanent, c.retryAfter)
			}
			if strings.Contains(err.Error(), "s3cr3t") {
				t.Errorf("error shows the URL: %v", err)
			}
		})
	}
}

// TestPostDeadEndpoints: a closed port fails at once, a server that never
// answers within the client's bound; neither error shows the URL.
func TestPostDeadEndpoints(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String() + "/s3cr3t"
	l.Close()

	release := make(chan struct{})
	hanging := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-release }))
	defer hanging.Close()
	defer close(release)

	for name, u := range map[string]string{"closed port": closed, "hanging": hanging.URL + "/s3cr3t"} {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			err := Post(context.Background(), NewClient(300*time.Millisecond), Target{URL: u, Format: FormatSlack}, []byte(`{}`))
			took := time.Since(start)
			var de *DeliveryError
			if !errors.As(err, &de) || de.Status != 0 || de.Permanent {
				t.Fatalf("Post = %v, want a retryable DeliveryError without status", err)
			}
			if took > 2*time.Second {
				t.Errorf("took %s, want about the 300ms bound", took)
			}
			if strings.Contains(err.Error(), "s3cr3t") {
				t.Errorf("error shows the URL: %v", err)
			}
		})
	}
}

func TestRecord(t *testing.T) {
	st, err := store.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r := Record{Targets: []Target{{URL: "https://hooks.slack.com/services/T/B/secret", Format: FormatSlack}}, Link: testLink}
	ref, err := Save(context.Background(), st, r)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(ref, "secret") || strings.Contains(ref, "slack") {
		t.Errorf("key %q tells of the URL", ref)
	}
	ref2, _ := Save(context.Background(), st, r)
	if ref2 == ref {
		t.Error("two saves of one record share a key: it is not random")
	}
	got, err := Load(context.Background(), st, ref)
	if err != nil || len(got.Targets) != 1 || got.Targets[0].URL != r.Targets[0].URL || got.Link != testLink {
		t.Errorf("Load = %+v, %v; want %+v", got, err, r)
	}
	if _, err := Load(context.Background(), st, "llm/abc"); err == nil {
		t.Error("Load of another kind of memo succeeded")
	}
}

func readAll(r *http.Request) []byte {
	var b bytes.Buffer
	b.ReadFrom(r.Body)
	return b.Bytes()
}
