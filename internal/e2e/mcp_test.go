package e2e

import (
	"context"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpSession is an MCP client session with `autocoder mcp` running as a
// process of its own, over stdio, and the progress messages it received.
type mcpSession struct {
	t   *testing.T
	cmd *exec.Cmd
	cs  *sdk.ClientSession

	mu       sync.Mutex
	progress []string
}

func (c *cluster) mcp(ctx context.Context) *mcpSession {
	c.t.Helper()
	s := &mcpSession{t: c.t, cmd: exec.Command(c.bin, "mcp")}
	s.cmd.Env = c.env
	client := sdk.NewClient(&sdk.Implementation{Name: "e2e"}, &sdk.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *sdk.ProgressNotificationClientRequest) {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.progress = append(s.progress, r.Params.Message)
		},
	})
	cs, err := client.Connect(ctx, &sdk.CommandTransport{Command: s.cmd}, nil)
	if err != nil {
		c.t.Fatalf("connect to autocoder mcp: %v", err)
	}
	s.cs = cs
	c.t.Cleanup(func() { cs.Close() })
	return s
}

// call calls a tool with a progress token and returns its text and
// whether it is a tool error; a protocol error fails the test.
func (s *mcpSession) call(ctx context.Context, name string, args map[string]any) (string, bool) {
	s.t.Helper()
	p := &sdk.CallToolParams{Name: name, Arguments: args}
	p.SetProgressToken(name)
	res, err := s.cs.CallTool(ctx, p)
	if err != nil {
		s.t.Fatalf("%s %v: %v", name, args, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
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
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := newCluster(t, pythonScenario.script(), "AUTOCODER_SANDBOX=bwrap")
	first := c.mcp(ctx)

	tools, err := first.cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) < 12 {
		t.Fatalf("tools/list: %v, %d tools", err, len(tools.Tools))
	}
	if out, isErr := first.call(ctx, "task_status", map[string]any{"id": ""}); !isErr || !strings.Contains(out, "id is empty") {
		t.Errorf("task_status with an empty id: isError %v, %q", isErr, out)
	}
	if out, isErr := first.call(ctx, "task_status", map[string]any{"id": "autocoder-nothing"}); !isErr || !strings.Contains(out, "no task autocoder-nothing here") {
		t.Errorf("task_status of an unknown task: isError %v, %q", isErr, out)
	}

	out := first.mustCall(ctx, "start_task", map[string]any{
		"task": pythonScenario.task, "language": "python", "approve_plan": true, "wait": true})
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
	seen := strings.Join(second.progressSeen(), "\n")
	for _, want := range []string{"[generating]", "[checking]"} {
		if !strings.Contains(seen, want) {
			t.Errorf("progress notifications never said %q:\n%s", want, seen)
		}
	}

	out = second.mustCall(ctx, "get_patch", map[string]any{"id": id})
	for _, want := range []string{"checkpoint #2 of task " + id, "+++ b/calc.py", "+    return a + b", "+++ b/test_calc.py"} {
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
