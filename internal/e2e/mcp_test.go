package e2e

import (
	"context"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/autocoder/autocoder/internal/llmtest"
)

// mcpSession is an MCP client session with `autocoder mcp` running as a
// process of its own, over stdio, and the progress messages it received.
// The client is mark3labs/mcp-go, another implementation than the
// server's (the official SDK), as an IDE's would be.
type mcpSession struct {
	t   *testing.T
	cmd *exec.Cmd
	c   *mcpclient.Client

	mu       sync.Mutex
	progress []string
}

func (c *cluster) mcp(ctx context.Context) *mcpSession { return startMCP(ctx, c.t, c.bin, c.env) }

// startMCP runs `autocoder mcp` (the binary bin) with env, and connects.
func startMCP(ctx context.Context, t *testing.T, bin string, env []string) *mcpSession {
	t.Helper()
	s := &mcpSession{t: t}
	var stderr syncBuffer
	client, err := mcpclient.NewStdioMCPClientWithOptions(bin, nil, []string{"mcp"},
		transport.WithCommandStderrWriter(&stderr),
		transport.WithCommandFunc(func(ctx context.Context, command string, _, args []string) (*exec.Cmd, error) {
			s.cmd = exec.CommandContext(ctx, command, args...)
			s.cmd.Env = env // nothing of this process's own
			return s.cmd, nil
		}))
	if err != nil {
		t.Fatalf("start autocoder mcp: %v", err)
	}
	t.Cleanup(func() {
		client.Close()
		if t.Failed() {
			t.Logf("autocoder mcp stderr:\n%s", stderr.String())
		}
	})
	client.OnNotification(func(n mcpgo.JSONRPCNotification) {
		if n.Method != "notifications/progress" {
			return
		}
		msg, _ := n.Params.AdditionalFields["message"].(string)
		s.mu.Lock()
		defer s.mu.Unlock()
		s.progress = append(s.progress, msg)
	})
	// The transport already runs; Start installs the notification handlers.
	if err := client.Start(ctx); err != nil {
		t.Fatalf("start the MCP client: %v", err)
	}
	init := mcpgo.InitializeRequest{}
	init.Params.ProtocolVersion = mcpgo.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcpgo.Implementation{Name: "e2e", Version: "1"}
	if _, err := client.Initialize(ctx, init); err != nil {
		t.Fatalf("initialize autocoder mcp: %v\n%s", err, stderr.String())
	}
	s.c = client
	return s
}

// call calls a tool with a progress token and returns its text and
// whether it is a tool error; a protocol error fails the test.
func (s *mcpSession) call(ctx context.Context, name string, args map[string]any) (string, bool) {
	s.t.Helper()
	req := mcpgo.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	req.Params.Meta = &mcpgo.Meta{ProgressToken: name}
	res, err := s.c.CallTool(ctx, req)
	if err != nil {
		s.t.Fatalf("%s %v: %v", name, args, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := mcpgo.AsTextContent(c); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), res.IsError
}

func (s *mcpSession) mustCall(ctx context.Context, name string, args map[string]any) string {
	s.t.Helper()
	out, isErr := s.call(ctx, name, args)
	if isErr {
		s.t.Fatalf("%s %v: tool error: %s", name, args, out)
	}
	return out
}

func (s *mcpSession) progressSeen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.progress...)
}

// TestMCPServerEndToEnd drives a task through `autocoder mcp` as an IDE
// would, over stdio, against a real Temporal server, worker process and
// bwrap sandbox with the scripted model: start with wait, stop at the plan
// gate; the MCP process is killed; a new one approves the plan by the
// task's id, follows it with progress notifications to success and gets
// the patch, writing nothing.
func TestMCPServerEndToEnd(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	began := time.Now()
	// Right at once: the test is about the MCP server, not about retries.
	sc := pythonScenario
	c := newCluster(t, llmtest.Rules(
		llmtest.Rule{Contains: planMarker, Reply: llmtest.Reply{Content: sc.plan}},
		llmtest.Rule{Contains: "", Reply: llmtest.Reply{Content: sc.fixed + fence("test_calc.py", "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n")}},
	), "AUTOCODER_SANDBOX=bwrap")
	t.Logf("%s: binary built, Temporal and a worker up", time.Since(began).Round(time.Millisecond))
	first := c.mcp(ctx)

	tools, err := first.c.ListTools(ctx, mcpgo.ListToolsRequest{})
	if err != nil || len(tools.Tools) != 12 {
		t.Fatalf("tools/list: %v, %+v", err, tools)
	}
	if out, isErr := first.call(ctx, "task_status", map[string]any{"id": ""}); !isErr || !strings.Contains(out, "id is empty") {
		t.Errorf("task_status with an empty id: isError %v, %q", isErr, out)
	}
	if out, isErr := first.call(ctx, "task_status", map[string]any{"id": "autocoder-nothing"}); !isErr || !strings.Contains(out, "no task autocoder-nothing here") {
		t.Errorf("task_status of an unknown task: isError %v, %q", isErr, out)
	}

	out := first.mustCall(ctx, "start_task", map[string]any{
		"task": sc.task, "language": "python", "approve_plan": true, "wait": true})
	m := regexp.MustCompile(`task (\S+) started`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("start_task does not name the task:\n%s", out)
	}
	id := m[1]
	for _, want := range []string{"WAITING FOR A PERSON", "(plan)", "Implement add", `approve_task`} {
		if !strings.Contains(out, want) {
			t.Errorf("start_task's result does not say %q:\n%s", want, out)
		}
	}
	if len(first.progressSeen()) == 0 {
		t.Error("start_task with wait sent no progress notification")
	}

	t.Logf("%s: at the plan gate", time.Since(began).Round(time.Millisecond))

	// The IDE goes away mid-task; the task waits on.
	if err := first.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	second := c.mcp(ctx)
	out = second.mustCall(ctx, "approve_task", map[string]any{"id": id})
	if !strings.Contains(out, "approved task "+id) {
		t.Errorf("approve_task: %q", out)
	}
	out = second.mustCall(ctx, "wait_task", map[string]any{"id": id, "max_wait_seconds": 150})
	if !strings.Contains(out, "phase:     succeeded") || !strings.Contains(out, "get_patch") {
		t.Fatalf("wait_task did not end in success:\n%s", out)
	}
	t.Logf("%s: succeeded", time.Since(began).Round(time.Millisecond))
	// The notifications follow the task by polling its status: a check
	// quicker than a poll is not seen, the model's work and the end are.
	seen := strings.Join(second.progressSeen(), "\n")
	for _, want := range []string{"[generating]", "[succeeded]"} {
		if !strings.Contains(seen, want) {
			t.Errorf("progress notifications never said %q:\n%s", want, seen)
		}
	}

	out = second.mustCall(ctx, "get_patch", map[string]any{"id": id})
	for _, want := range []string{"checkpoint #1 of task " + id, "+++ b/calc.py", "+    return a + b", "+++ b/test_calc.py"} {
		if !strings.Contains(out, want) {
			t.Errorf("get_patch does not hold %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "wrote") {
		t.Errorf("get_patch without write_to says it wrote:\n%s", out)
	}
	dir := t.TempDir()
	out = second.mustCall(ctx, "get_patch", map[string]any{"id": id, "write_to": dir})
	if got := readProject(t, dir); !strings.Contains(out, "wrote 2 changed file(s)") || !strings.Contains(got["calc.py"], "return a + b") {
		t.Errorf("get_patch with write_to wrote %v:\n%s", got, out)
	}
}

// TestMCPInLocalMode: with no Temporal address, `autocoder mcp` starts the
// data dir's local server on its first call, as every command does, and a
// task started through it runs there to success.
func TestMCPInLocalMode(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sc := pythonScenario
	l := newLocal(t, llmtest.New(t, llmtest.Rules(
		llmtest.Rule{Contains: planMarker, Reply: llmtest.Reply{Content: sc.plan}},
		llmtest.Rule{Contains: "", Reply: llmtest.Reply{Content: sc.fixed + fence("test_calc.py", "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n")}},
	)), "AUTOCODER_SANDBOX=bwrap")
	s := startMCP(ctx, t, l.bin, l.env)
	if out := s.mustCall(ctx, "list_tasks", map[string]any{}); out != "no tasks" {
		t.Errorf("list_tasks on a new data dir: %q", out)
	}
	if _, err := l.address(); err != nil {
		t.Fatalf("no local server after the first call: %v", err)
	}
	out := s.mustCall(ctx, "start_task", map[string]any{"task": sc.task, "language": "python", "wait": true, "max_wait_seconds": 150})
	if !strings.Contains(out, "phase:     succeeded") {
		t.Fatalf("the task did not succeed in the local server:\n%s", out)
	}
	if n := l.serversStarted(); n != 1 {
		t.Errorf("%d local servers started, want 1", n)
	}
}
