package e2e

import (
	"slices"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/llmtest"
	"github.com/autocoder/autocoder/internal/policy"
	"github.com/autocoder/autocoder/workflows"
)

// A REST API in Go: handlers on net/http, a server command, and tests
// that serve the handlers with httptest and call them.
var goRESTAPI = fence("go.mod", "module example.com/items\n\ngo 1.21\n") +
	fence("items.go", `package items

import (
	"encoding/json"
	"net/http"
	"sync"
)

// Store keeps a list of items and serves it over HTTP.
type Store struct {
	mu    sync.Mutex
	items []string
}

// Handler routes GET and POST /items.
func (s *Store) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/items", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		switch r.Method {
		case http.MethodGet:
			_ = json.NewEncoder(w).Encode(s.items)
		case http.MethodPost:
			var item string
			if err := json.NewDecoder(r.Body).Decode(&item); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			s.items = append(s.items, item)
			w.WriteHeader(http.StatusCreated)
		default:
			w.WriteHeader(http.StatusMethodNotAllowed)
		}
	})
	return mux
}
`) + fence("cmd/server/main.go", `package main

import (
	"log"
	"net/http"

	"example.com/items"
)

func main() {
	log.Fatal(http.ListenAndServe(":8080", (&items.Store{}).Handler()))
}
`) + fence("items_test.go", `package items

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestPostThenGet(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer((&Store{}).Handler())
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/items", "application/json", strings.NewReader(`+"`\"apple\"`"+`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST /items: %d", resp.StatusCode)
	}
	resp, err = http.Get(srv.URL + "/items")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got []string
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != "apple" {
		t.Fatalf("GET /items = %v, want [apple]", got)
	}
}
`)

// An HTTP server in Python on http.server, and a test that starts it on
// localhost and calls it.
var pyHTTPServer = fence("server.py", `import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({"path": self.path}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format, *args):
        pass


def serve(port=8000):
    return ThreadingHTTPServer(("127.0.0.1", port), Handler)
`) + fence("test_server.py", `import json
import threading
import urllib.request

from server import serve


def test_get_echoes_the_path():
    srv = serve(0)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/hello" % srv.server_port) as resp:
            assert json.loads(resp.read()) == {"path": "/hello"}
    finally:
        srv.shutdown()
`)

// A project whose own code spawns processes and imports dynamically, with
// a bug in another function.
var ownCodeProject = map[string]string{
	"more.py": "import subprocess\n\n\ndef run(cmd):\n    return subprocess.run(cmd, capture_output=True).stdout\n\n\n" +
		"def load(name):\n    return __import__(name)\n\n\ndef add(a, b):\n    return a - b\n",
	"test_more.py": "from more import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n",
}

const (
	goRESTTask  = "Write a REST API for a list of items in Go, with tests."
	pyHTTPTask  = "Write an HTTP server in Python that answers with the path, with tests."
	ownCodeTask = "Fix add in more.py."
)

func policyScript() llmtest.Script {
	return llmtest.Rules(
		llmtest.Rule{Contains: planMarker, Reply: llmtest.Reply{Content: "1. Write it."}},
		llmtest.Rule{Contains: "Task:\n" + goRESTTask, Reply: llmtest.Reply{Content: goRESTAPI}},
		llmtest.Rule{Contains: "Task:\n" + pyHTTPTask, Reply: llmtest.Reply{Content: pyHTTPServer}},
		llmtest.Rule{Contains: "Task:\n" + ownCodeTask, Reply: llmtest.Reply{Content: edit("more.py", "    return a - b", "    return a + b")}},
	)
}

// TestOrdinarySoftwarePassesTheSafetyPolicy: a Go REST API tested with
// httptest and a Python HTTP server tested on localhost pass by default,
// with what their code does (serving HTTP) reported as warnings in status,
// status --json, run's result and export; their tests are not findings.
// With --policy deny the same code fails on those findings. A project's
// own untouched code that spawns processes and imports dynamically gives
// no finding when the model changes another line, in deny mode too.
func TestOrdinarySoftwarePassesTheSafetyPolicy(t *testing.T) {
	t.Parallel()
	c := newCluster(t, policyScript())
	for _, tc := range []struct {
		lang, task, test string
		warned           []string // files the warnings must name, and only these
	}{
		{"go", goRESTTask, "items_test.go", []string{"cmd/server/main.go", "items.go"}},
		{"python", pyHTTPTask, "test_server.py", []string{"server.py"}},
	} {
		t.Run(tc.lang, func(t *testing.T) {
			t.Parallel()
			cc := *c
			cc.t = t
			out, errOut, code := cc.cli("run", "--lang", tc.lang, "--out", t.TempDir(), "--max-iterations", "1", tc.task)
			id := taskID(t, errOut)
			st := cc.status(id)
			if code != 0 || st.Phase != workflows.PhaseSucceeded {
				t.Fatalf("exit %d, phase %s; want success by default\n%s\n%s\n%s", code, st.Phase, out, errOut, cc.mustCLI("status", id))
			}
			cp := st.Checkpoints[len(st.Checkpoints)-1]
			var files []string
			for _, w := range cp.Warnings {
				if w.Rule != policy.Network {
					t.Errorf("warning %v is not about the network", w)
				}
				if !slices.Contains(files, w.File) {
					files = append(files, w.File)
				}
			}
			slices.Sort(files)
			if !slices.Equal(files, tc.warned) {
				t.Errorf("status --json warns about %v, want %v (and never the test %s): %+v", files, tc.warned, tc.test, cp.Warnings)
			}
			text := cc.mustCLI("status", id)
			first := cp.Warnings[0].String()
			for what, s := range map[string]string{"status": text, "run": out} {
				if !strings.Contains(s, "~ safety: "+first) {
					t.Errorf("%s does not list the warning %q:\n%s", what, first, s)
				}
			}
			if !strings.Contains(text, "safety warning(s) to review") {
				t.Errorf("status does not say the checkpoint has warnings to review:\n%s", text)
			}
			if _, exported, code := cc.cli("export", id, t.TempDir()); code != 0 || !strings.Contains(exported, "~ safety: "+first) {
				t.Errorf("export: exit %d, and it does not list the warnings:\n%s", code, exported)
			}

			// In deny mode the same code fails, on those findings.
			out, errOut, code = cc.cli("run", "--lang", tc.lang, "--out", t.TempDir(), "--max-iterations", "1", "--policy", "deny", tc.task)
			id = taskID(t, errOut)
			st = cc.status(id)
			if code == 0 || st.Phase != workflows.PhaseFailed || st.LastTest == nil || st.LastTest.Stage != "validate" {
				t.Fatalf("deny: exit %d, phase %s; want a failed validation\n%s\n%s", code, st.Phase, out, errOut)
			}
			if !strings.Contains(st.LastTest.Output, first) || strings.Contains(st.LastTest.Output, tc.test) {
				t.Errorf("deny: the failure does not name %q, or names the test %s:\n%s", first, tc.test, st.LastTest.Output)
			}
		})
	}
	t.Run("the project's own code", func(t *testing.T) {
		t.Parallel()
		cc := *c
		cc.t = t
		for _, mode := range []string{"deny", "warn"} {
			proj := t.TempDir()
			writeProject(t, proj, ownCodeProject)
			out, errOut, code := cc.cli("run", "--dir", proj, "--test-cmd", pytestCmd, "--max-iterations", "1", "--policy", mode, ownCodeTask+" ("+mode+")")
			id := taskID(t, errOut)
			st := cc.status(id)
			if code != 0 || st.Phase != workflows.PhaseSucceeded {
				t.Fatalf("%s: exit %d, phase %s; want success\n%s\n%s\n%s", mode, code, st.Phase, out, errOut, cc.mustCLI("status", id))
			}
			for _, cp := range st.Checkpoints {
				if len(cp.Warnings) > 0 {
					t.Errorf("%s: the user's own code gave warnings: %v", mode, cp.Warnings)
				}
			}
			if text := cc.mustCLI("status", id); strings.Contains(text, "safety") {
				t.Errorf("%s: status names safety findings:\n%s", mode, text)
			}
		}
	})
}

func taskID(t *testing.T, errOut string) string {
	t.Helper()
	m := startedID.FindStringSubmatch(errOut)
	if m == nil {
		t.Fatalf("run printed no task id:\n%s", errOut)
	}
	return m[1]
}
