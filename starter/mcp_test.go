package starter

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/autocoder/autocoder/internal/workspace"
	"github.com/autocoder/autocoder/workflows"
)

// mcpCommand runs `autocoder mcp` on pipes against c and returns a client
// session with it.
func mcpCommand(t *testing.T, c *fakeClient) (*sdk.ClientSession, *Factory) {
	t.Helper()
	f, _, _ := fakeFactory(t, c)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	f.IO.In, f.IO.Out = inR, outW
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	done := make(chan int, 1)
	go func() { done <- execute(ctx, f, []string{"mcp"}) }()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test"}, nil).Connect(ctx, &sdk.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close() // closes the command's stdin: it ends
		if code := <-done; code != exitOK {
			t.Errorf("autocoder mcp exited %d after its client closed", code)
		}
		cancel()
	})
	return cs, f
}

func mcpCall(t *testing.T, cs *sdk.ClientSession, name string, args map[string]any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		b.WriteString(c.(*sdk.TextContent).Text)
	}
	return b.String(), res.IsError
}

func TestMCPStartsAsRunDoes(t *testing.T) {
	c := newFakeClient()
	cs, _ := mcpCommand(t, c)
	proj := t.TempDir()
	for name, body := range map[string]string{"calc.py": "def add(a, b):\n    return a - b\n", "test_calc.py": "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"} {
		if err := os.WriteFile(filepath.Join(proj, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, isErr := mcpCall(t, cs, "start_task", map[string]any{"task": "fix add", "dir": proj, "approve_plan": true, "budget_tokens": 5000})
	if isErr {
		t.Fatalf("start_task: %s", out)
	}
	for _, want := range []string{"task autocoder-new started", "web UI: http://ui/namespaces/default/workflows/autocoder-new",
		"uploaded " + proj + ": 2 files", "your tests (checks run them as they were", "follow it with wait_task"} {
		if !strings.Contains(out, want) {
			t.Errorf("start_task's result lacks %q:\n%s", want, out)
		}
	}
	if len(c.started) != 1 {
		t.Fatalf("started %d tasks", len(c.started))
	}
	in := c.started[0]
	if in.Language != "python" || in.TestCmd == "" || !in.ApprovePlan || in.BudgetTokens != 5000 ||
		in.MaxIterations != workflows.DefaultMaxIterations || in.Policy != workflows.DefaultPolicy || in.InputSnapshot == "" {
		t.Errorf("task input %+v: want python judged by the project's tests, the plan gate, the budget and the defaults", in)
	}

	out, isErr = mcpCall(t, cs, "start_task", map[string]any{"task": "fix add", "max_iterations": -1})
	if !isErr || !strings.HasPrefix(out, "max_iterations must be at least 1") {
		t.Errorf("start_task with max_iterations -1: %v %q", isErr, out)
	}
	out, isErr = mcpCall(t, cs, "start_task", map[string]any{"task": "fix add", "language": "cobol"})
	if !isErr || !strings.HasPrefix(out, `language "cobol": unknown language`) {
		t.Errorf("start_task in cobol: %v %q", isErr, out)
	}
}

func TestMCPPatchAndStatus(t *testing.T) {
	c := newFakeClient()
	cs, f := mcpCommand(t, c)
	st, err := f.Store(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	in, err := st.PutSnapshot(context.Background(), []workspace.File{{Path: "calc.py", Data: []byte("def add(a, b):\n    return a - b\n"), Mode: 0o644}})
	if err != nil {
		t.Fatal(err)
	}
	fixed, err := st.PutSnapshot(context.Background(), []workspace.File{{Path: "calc.py", Data: []byte("def add(a, b):\n    return a + b\n"), Mode: 0o644}})
	if err != nil {
		t.Fatal(err)
	}
	done := working
	done.Phase, done.InputSnapshot = workflows.PhaseSucceeded, in
	done.Checkpoints = []workflows.Checkpoint{{N: 1, Step: 1, Iteration: 1, SnapshotID: fixed, Passed: true, Summary: "add adds"}}
	c.statuses["t1"] = done

	out, isErr := mcpCall(t, cs, "task_status", map[string]any{"id": "t1"})
	if isErr || !strings.Contains(out, "phase:     succeeded") || !strings.Contains(out, `get_patch {"id": "t1"}`) {
		t.Errorf("task_status: %v\n%s", isErr, out)
	}
	out, isErr = mcpCall(t, cs, "get_patch", map[string]any{"id": "t1"})
	if isErr || !strings.Contains(out, "checkpoint #1 of task t1\n") || !strings.Contains(out, "-    return a - b\n+    return a + b") {
		t.Errorf("get_patch: %v\n%s", isErr, out)
	}
	dir := t.TempDir()
	out, isErr = mcpCall(t, cs, "get_patch", map[string]any{"id": "t1", "write_to": dir})
	got, _ := os.ReadFile(filepath.Join(dir, "calc.py"))
	if isErr || !strings.Contains(out, "wrote 1 changed file(s) to "+dir) || !strings.Contains(string(got), "a + b") {
		t.Errorf("get_patch with write_to: %v %q; calc.py %q", isErr, out, got)
	}
	out, isErr = mcpCall(t, cs, "get_patch", map[string]any{"id": "t1", "checkpoint": 3})
	if !isErr || !strings.Contains(out, "the task has checkpoints 1 to 1") {
		t.Errorf("get_patch of a checkpoint the task lacks: %v %q", isErr, out)
	}
	out, isErr = mcpCall(t, cs, "approve_task", map[string]any{"id": "nope"})
	if !isErr || !strings.Contains(out, "no task nope here") {
		t.Errorf("approve_task of an unknown task: %v %q", isErr, out)
	}
}

func TestMCPOverHTTP(t *testing.T) {
	c := newFakeClient()
	c.statuses["t1"] = working
	f, _, _ := fakeFactory(t, c)
	errR, errW := io.Pipe()
	f.IO.ErrOut = errW
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	done := make(chan int, 1)
	go func() { done <- execute(ctx, f, []string{"mcp", "--listen", "127.0.0.1:0"}) }()
	line, err := bufio.NewReader(errR).ReadString('\n')
	go io.Copy(io.Discard, errR)
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "serving MCP (streamable HTTP) at ")
	if err != nil || !ok {
		t.Fatalf("mcp --listen said %q (%v); want the address it serves", line, err)
	}
	// Without the token, nothing is served; with another, neither.
	for _, token := range []string{"", "not-the-token"} {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("a request with token %q: %s, want 401", token, resp.Status)
		}
	}
	data, err := os.ReadFile(filepath.Join(f.cfg.DataDir, "mcp-token"))
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(filepath.Join(f.cfg.DataDir, "mcp-token")); fi.Mode().Perm() != 0o600 {
		t.Errorf("the token file's mode is %v, want 0600", fi.Mode().Perm())
	}
	bearer := &http.Client{Transport: bearerTransport{token: strings.TrimSpace(string(data))}}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test"}, nil).Connect(ctx, &sdk.StreamableClientTransport{Endpoint: url, HTTPClient: bearer}, nil)
	if err != nil {
		t.Fatal(err)
	}
	out, isErr := mcpCall(t, cs, "task_status", map[string]any{"id": "t1"})
	if isErr || !strings.Contains(out, "now:       turn 4: read app/models.py") {
		t.Errorf("task_status over HTTP: %v\n%s", isErr, out)
	}
	cs.Close()
	cancel()
	if code := <-done; code != exitOK {
		t.Errorf("mcp --listen exited %d when stopped, want a clean stop", code)
	}
	errW.Close()
}

// bearerTransport sends the token with every request.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}
