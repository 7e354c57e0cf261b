package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/workflows"
)

// TestNotifyEndToEnd: a task run with --notify tells a local webhook when
// it waits at the plan gate and when it succeeds, with the commands that
// answer it; a second webhook that never answers holds up neither the
// task nor the first webhook's messages.
func TestNotifyEndToEnd(t *testing.T) {
	t.Parallel()
	receiver, next := webhookReceiver(t)
	hung := make(chan any, 16) // the messages the dead webhook was sent
	release := make(chan struct{})
	dead := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m map[string]any
		json.NewDecoder(r.Body).Decode(&m)
		hung <- m["text"]
		<-release // never answers while the test looks
	}))
	t.Cleanup(dead.Close)

	begun := time.Now()
	c := newCluster(t, pythonScenario.script(), "AUTOCODER_SANDBOX=bwrap", "TEMPORAL_UI_URL=http://ui.example")
	// Before the worker stops: it waits for the activity the dead webhook holds.
	t.Cleanup(func() { close(release) })
	start := time.Now()
	t.Logf("cluster up in %s (the binary built)", start.Sub(begun).Round(time.Millisecond))
	id := c.start("--lang", "python", "--approve-plan",
		"--notify", "json:"+receiver+"/hook", "--notify", "slack:"+dead.URL+"/hook/s3cr3t", pythonScenario.task)

	gate := next("gate")
	t.Logf("gate message %s after start", time.Since(start).Round(time.Millisecond))
	if gate["event"] != "gate" || gate["gate"] != workflows.GatePlan || gate["taskId"] != id ||
		!strings.Contains(gate["details"].(string), "Implement add") || !strings.HasPrefix(fmt.Sprint(gate["link"]), "http://ui.example/namespaces/") || !strings.HasSuffix(fmt.Sprint(gate["link"]), "/workflows/"+id) {
		t.Errorf("gate message (link %q): %v", gate["link"], gate)
	}
	if cmds, _ := json.Marshal(gate["commands"]); !strings.Contains(string(cmds), "autocoder approve "+id) {
		t.Errorf("gate message's commands %s lack autocoder approve %s", cmds, id)
	}

	approved := time.Now()
	c.mustCLI("approve", id)
	end := next("success")
	took := time.Since(approved)
	t.Logf("success message %s after approval", took.Round(time.Millisecond))
	if end["event"] != "succeeded" || end["taskId"] != id {
		t.Errorf("end message: %v", end)
	}
	// The dead webhook was sent both messages and holds the last one (it
	// is tried for 10 s), yet the task is already done.
	for range 2 {
		select {
		case <-hung:
		case <-time.After(10 * time.Second):
			t.Fatal("the dead webhook was not sent both messages")
		}
	}
	if st := c.status(id); st.Phase != workflows.PhaseSucceeded {
		t.Errorf("phase %s while the dead webhook holds its message, want succeeded", st.Phase)
	}
	if took > 20*time.Second {
		t.Errorf("success told %s after approval: the dead webhook held the task up", took)
	}
	if strings.Contains(c.mustCLI("status", id, "--json"), "s3cr3t") {
		t.Error("the status shows a webhook URL")
	}
}

// TestWorkerNotifications: webhooks in a worker's own configuration are
// told of a task whose client names none, with the worker's Web UI link:
// a cluster's operator sets them once for every client.
func TestWorkerNotifications(t *testing.T) {
	t.Parallel()
	receiver, next := webhookReceiver(t)
	conf := filepath.Join(t.TempDir(), "worker.toml")
	if err := os.WriteFile(conf, []byte("[[notifications]]\nurl = \""+receiver+"/team\"\nformat = \"json\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := newClusterWith(t, pythonScenario.script(), []string{"--config", conf}, "AUTOCODER_SANDBOX=bwrap", "TEMPORAL_UI_URL=http://ui.example")
	id := c.start("--lang", "python", "--approve-plan", pythonScenario.task)
	gate := next("gate")
	if gate["event"] != "gate" || gate["taskId"] != id || gate["path"] != "/team" || !strings.HasSuffix(fmt.Sprint(gate["link"]), "/workflows/"+id) {
		t.Errorf("gate message: %v", gate)
	}
	c.mustCLI("approve", id)
	if end := next("success"); end["event"] != "succeeded" || end["taskId"] != id {
		t.Errorf("end message: %v", end)
	}
	if m := next(""); m != nil {
		t.Errorf("a third message: %v", m)
	}
}

// webhookReceiver is a local webhook: its URL, and next, which returns
// the next message it was sent (its path as "path"), failing the test
// when none comes within a minute; next("") waits 2 s and returns nil
// when none comes.
func webhookReceiver(t *testing.T) (string, func(what string) map[string]any) {
	messages := make(chan map[string]any, 16)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m map[string]any
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
			t.Errorf("webhook body: %v", err)
		}
		m["path"] = r.URL.Path
		messages <- m
	}))
	t.Cleanup(receiver.Close)
	return receiver.URL, func(what string) map[string]any {
		t.Helper()
		wait := time.Minute
		if what == "" {
			wait = 2 * time.Second
		}
		select {
		case m := <-messages:
			return m
		case <-time.After(wait):
			if what != "" {
				t.Fatalf("no %s message within a minute", what)
			}
			return nil
		}
	}
}
